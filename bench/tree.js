// Which build the benchmarks measure, as paths only (nothing is loaded here):
//   OUTBOX_BENCH_TREE: the repository whose bin/run.js the CLI suites spawn (default: this one)
//   OUTBOX_BENCH_DIST: its compiled library (default: <OUTBOX_BENCH_TREE>/dist)
// `npm run bench -- compare` sets them to run the same suites against two trees.
import {join, resolve} from 'node:path'

export const TREE = resolve(process.env.OUTBOX_BENCH_TREE ?? new URL('..', import.meta.url).pathname)
export const DIST = resolve(process.env.OUTBOX_BENCH_DIST ?? join(TREE, 'dist'))
/** The CLI the start-up and chaos suites spawn. */
export const BIN = join(TREE, 'bin/run.js')
/** The library's public entry: the only file of DIST the suites import. */
export const ENTRY = join(DIST, 'src/index.js')
