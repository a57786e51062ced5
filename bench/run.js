#!/usr/bin/env node
// `npm run bench [-- --quick] [suite ...]`: runs the benchmark suites in bench/suites/ against
// the compiled code (dist/) and the local servers, writes bench/results/<suite>.json and .md,
// and rebuilds BENCHMARKS.md from every suite's latest results.
// `npm run bench -- --report`: only that rebuild (after merging branches that reran suites).
// `npm run bench -- compare ...`: the same suites on two builds, side by side (bench/compare.js).
//
// A suite is bench/suites/<name>.js exporting `default async function ({quick, log, args})`
// returning {title, markdown, raw}; args are the command line's, for a suite's own
// `--name=value` options (pressure's phase lengths). Figures inside a suite are ratios against a baseline
// measured in the same run, because this machine is shared and noisy.
import {existsSync, readdirSync, writeFileSync} from 'node:fs'
import {basename, join} from 'node:path'
import {writeBenchmarks} from './report.js'
import {ENTRY} from './tree.js'

const root = new URL('..', import.meta.url).pathname
const suitesDir = join(root, 'bench/suites')
const resultsDir = join(root, 'bench/results')
const args = process.argv.slice(2)
const quick = args.includes('--quick')
const wanted = args.filter((a) => !a.startsWith('--'))
const log = (line) => process.stdout.write(`${line}\n`)

if (args[0] === 'compare') {
  const {compare} = await import('./compare.js')
  process.exit(await compare(args.slice(1)))
}

if (args.includes('--report')) {
  if (args.length > 1) {
    console.error('bench: --report runs no suite; pass it alone')
    process.exit(2)
  }
  log(`BENCHMARKS.md: ${writeBenchmarks(root)} section(s) from bench/results/*.md`)
  process.exit(0)
}

if (!existsSync(ENTRY)) {
  console.error(`bench: ${ENTRY} is missing; run \`npm run build\` (npm ci does it) first`)
  process.exit(2)
}

// Suites that run only when named: pressure holds phases of minutes (about an hour in full,
// 5 minutes quick), which would swamp the one-minute `--quick` run of every suite.
const ON_REQUEST = ['pressure']

const available = readdirSync(suitesDir)
  .filter((f) => f.endsWith('.js'))
  .map((f) => basename(f, '.js'))
const suites = available.filter((name) => (wanted.length === 0 ? !ON_REQUEST.includes(name) : wanted.includes(name))).sort()
if (wanted.length && suites.length !== wanted.length) {
  console.error(`bench: unknown suite(s): ${wanted.filter((w) => !available.includes(w)).join(', ')}`)
  process.exit(2)
}
if (wanted.length === 0) log(`(${ON_REQUEST.join(', ')}: run by name only, e.g. \`npm run bench -- ${ON_REQUEST[0]}\`)`)

// Imported only now: it loads the compiled library, checked for above.
const {machine} = await import('./machine.js')
const host = await machine()
let failed = 0
const timings = []
for (const name of suites) {
  log(`== ${name}${quick ? ' (quick)' : ''}`)
  const started = Date.now()
  try {
    const {default: run} = await import(join(suitesDir, `${name}.js`))
    const result = await run({quick, log: (line) => log(`   ${line}`), args})
    const meta = {suite: name, quick, finishedAt: new Date().toISOString(), seconds: (Date.now() - started) / 1000, machine: host}
    timings.push(`${name} ${meta.seconds.toFixed(1)} s`)
    writeFileSync(join(resultsDir, `${name}.json`), JSON.stringify({...meta, raw: result.raw}, null, 2) + '\n')
    writeFileSync(join(resultsDir, `${name}.md`), `## ${result.title}\n\n${result.markdown.trim()}\n\n_Last run: ${meta.finishedAt}${quick ? ' (--quick)' : ''}, ${meta.seconds.toFixed(0)} s._\n`)
  } catch (error) {
    failed++
    console.error(`bench: ${name} failed: ${error?.stack ?? error}`)
  }
}

log(`BENCHMARKS.md: ${writeBenchmarks(root)} section(s); ${timings.join(', ')}; ${((performance.now()) / 1000).toFixed(0)} s in all`)
process.exit(failed ? 1 : 0)
