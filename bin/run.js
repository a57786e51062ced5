#!/usr/bin/env node
// Production entry: runs the compiled commands in dist/ (built by `npm ci` / `npm run build`).
import {execute} from '@oclif/core'

await execute({dir: import.meta.url})
// Exit as soon as the command is done rather than when Node's handle cleanup is: after a chaos
// run (about one MariaDB run in four) Node's exit-time cleanup spun at full CPU on a request that
// never completed, and the job hung after printing its verdict. stdout and stderr are written
// synchronously on Linux (files, pipes, terminals), so nothing printed is lost.
process.exit()
