#!/usr/bin/env node
// Production entry: runs the compiled commands in dist/ (built by `npm ci` / `npm run build`).
import {execute} from '@oclif/core'

await execute({dir: import.meta.url})
