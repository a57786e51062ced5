// One suite, one side of `npm run bench -- compare`: runs bench/suites/<suite>.js against the build
// that OUTBOX_BENCH_TREE / OUTBOX_BENCH_DIST name (bench/tree.js), in a process of its own so
// each side loads only its own build, and writes {seconds, headline, raw} as JSON to <out>.
// Touches neither bench/results/ nor BENCHMARKS.md.
//   node bench/compare-child.js <suite> <out.json> [--quick]
import {writeFileSync} from 'node:fs'
import {loadavg} from 'node:os'
import {join} from 'node:path'

const [suite, out, ...flags] = process.argv.slice(2)
const quick = flags.includes('--quick')
const {default: run, headline} = await import(join(new URL('suites', import.meta.url).pathname, `${suite}.js`))
if (typeof headline !== 'function') throw new Error(`bench compare: suite ${suite} exports no headline(raw)`)
const load = loadavg()[0]
const started = performance.now()
const result = await run({quick, log: (line) => process.stdout.write(`      ${line}\n`)})
const seconds = (performance.now() - started) / 1000
writeFileSync(out, JSON.stringify({suite, quick, seconds, loadAtStart: load, headline: headline(result.raw), raw: result.raw}) + '\n')
process.exit(0)
