// `npm run bench -- compare [--base DIR] [--head DIR] [--rounds N] [--quick] [--alternate] [--ops-rows N|full] [suite ...]`
// Runs the SAME suite code (this tree's bench/) against two builds, the base tree (default
// /work/base, or OUTBOX_BENCH_BASE) and the head tree (default this one), base then head in each
// round (ABAB...; --alternate: head first in every second round, ABBA...), each run in a process of its own that loads only its side's public entry
// (bench/lib-under-test.js). Writes bench/results/compare.md and compare.json after every suite:
// per suite its headline figures (the suite's headline(raw)) side by side, each round's value and
// the median. Suites: those with a headline (default: all of them). Both trees must be built.
// The ordinary results (bench/results/<suite>.*, BENCHMARKS.md) are left alone.
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {basename, join, resolve} from 'node:path'
import {compareMarkdown, summarise} from './compare-report.js'

const root = resolve(new URL('..', import.meta.url).pathname)
const suitesDir = join(root, 'bench/suites')
const resultsDir = join(root, 'bench/results')
const log = (line) => process.stdout.write(`${line}\n`)
/** The ops suite's size in a compare round unless --ops-rows says otherwise: the full plan at a tenth. */
const DEFAULT_OPS_ROWS = 100_000

function usage(message) {
  console.error(`bench compare: ${message}
usage: npm run bench -- compare [--base DIR] [--head DIR] [--rounds N] [--quick] [--alternate] [--ops-rows N|full] [suite ...]`)
  process.exit(2)
}

function parse(args) {
  const options = {base: process.env.OUTBOX_BENCH_BASE ?? '/work/base', head: root, rounds: 3, quick: false, alternate: false, opsRows: undefined, suites: []}
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    const value = () => (i + 1 < args.length ? args[++i] : usage(`${arg} needs a value`))
    if (arg === '--base') options.base = value()
    else if (arg === '--head') options.head = value()
    else if (arg === '--rounds') options.rounds = Number(value())
    else if (arg === '--quick') options.quick = true
    else if (arg === '--alternate') options.alternate = true
    else if (arg === '--ops-rows') options.opsRows = value()
    else if (arg.startsWith('--')) usage(`unknown option ${arg}`)
    else options.suites.push(arg)
  }
  if (!Number.isInteger(options.rounds) || options.rounds < 1) usage('--rounds takes a whole number, at least 1')
  options.base = resolve(options.base)
  options.head = resolve(options.head)
  return options
}

/** A side's tree: its commit, whether it has uncommitted changes, and whether its build is there and newer than its sources. */
function describeTree(name, tree) {
  const entry = join(tree, 'dist/src/index.js')
  const missing = [entry, join(tree, 'bin/run.js')].filter((f) => !existsSync(f))
  if (missing.length) return {name, tree, problem: `${name} tree ${tree} lacks ${missing.join(' and ')}: run \`npm run build\` there first`}
  const git = (...args) => spawnSync('git', ['-C', tree, ...args], {encoding: 'utf8'}).stdout?.trim() ?? ''
  const subject = git('log', '-1', '--format=%h %s')
  const commit = subject.length > 90 ? `${subject.slice(0, 89)}…` : subject || 'not a git tree'
  const dirty = git('status', '--porcelain', '--untracked-files=no').split('\n').filter(Boolean).length
  const built = statSync(entry).mtimeMs
  const newer = ['src', 'dialects', 'commands'].flatMap((dir) => newerSources(join(tree, dir), built))
  const warnings = newer.length ? [`dist/ is older than ${newer.length} source file(s) (${newer.slice(0, 3).join(', ')}${newer.length > 3 ? ', ...' : ''}): run \`npm run build\` there`] : []
  return {name, tree, commit, dirty, warnings}
}

function newerSources(dir, than) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, {recursive: true})
    .filter((f) => String(f).endsWith('.ts'))
    .map((f) => join(dir, String(f)))
    .filter((f) => statSync(f).mtimeMs > than)
}

/** Suites that export headline(raw): the ones compare can put side by side. */
function comparableSuites() {
  return readdirSync(suitesDir)
    .filter((f) => f.endsWith('.js') && /export function headline\(/.test(readFileSync(join(suitesDir, f), 'utf8')))
    .map((f) => basename(f, '.js'))
    .sort()
}

/** OUTBOX_BENCH_OPS_ROWS for the children: undefined = the suite's own sizes. */
function opsRows(options) {
  if (options.opsRows === 'full') return undefined
  if (options.opsRows !== undefined) return options.opsRows
  return options.quick ? undefined : String(DEFAULT_OPS_ROWS)
}

/** One suite on one side: a child process, its log streamed, its figures read back. */
function runSide(suite, side, options, scratch) {
  const out = join(scratch, `${suite}-${side.name}.json`)
  rmSync(out, {force: true})
  const env = {...process.env, OUTBOX_BENCH_TREE: side.tree, OUTBOX_BENCH_DIST: join(side.tree, 'dist')}
  delete env.OUTBOX_BENCH_OPS_ROWS
  const rows = opsRows(options)
  if (rows !== undefined) env.OUTBOX_BENCH_OPS_ROWS = rows
  const args = [join(root, 'bench/compare-child.js'), suite, out, ...(options.quick ? ['--quick'] : [])]
  const r = spawnSync(process.execPath, args, {stdio: ['ignore', 'inherit', 'inherit'], env})
  if (r.status !== 0 || !existsSync(out)) throw new Error(`${suite} on ${side.name} (${side.tree}) exited ${r.status ?? r.signal}`)
  return JSON.parse(readFileSync(out, 'utf8'))
}

function write(report) {
  writeFileSync(join(resultsDir, 'compare.json'), JSON.stringify(report, null, 2) + '\n')
  writeFileSync(join(resultsDir, 'compare.md'), compareMarkdown(report))
}

export async function compare(args) {
  const options = parse(args)
  const available = comparableSuites()
  const suites = options.suites.length ? options.suites : available
  const unknown = suites.filter((s) => !available.includes(s))
  if (unknown.length) usage(`no headline figures in suite(s) ${unknown.join(', ')}; comparable: ${available.join(', ')}`)
  const sides = [describeTree('base', options.base), describeTree('head', options.head)]
  for (const side of sides) {
    if (side.problem) usage(side.problem)
    for (const warning of side.warnings) log(`warning: ${side.name}: ${warning}`)
  }
  if (options.base === options.head) log('note: base and head are the same tree: an A/A run, which shows the noise alone')

  // Imported only now, after the trees are checked: it connects to the servers.
  const {machine} = await import('./machine.js')
  const rerun = ['npm run bench -- compare', `--base ${options.base}`, options.head === root ? '' : `--head ${options.head}`, `--rounds ${options.rounds}`, options.quick ? '--quick' : '', options.alternate ? '--alternate' : '', options.opsRows ? `--ops-rows ${options.opsRows}` : '', ...suites]
  const report = {
    startedAt: new Date().toISOString(),
    finishedAt: undefined,
    command: rerun.filter(Boolean).join(' '),
    quick: options.quick,
    opsRows: suites.includes('ops') ? (opsRows(options) ?? 'suite default') : undefined,
    rounds: options.rounds,
    order: options.alternate ? 'base first in odd rounds, head first in even ones (ABBA...)' : 'base then head in every round (ABAB...)',
    sides: Object.fromEntries(sides.map(({name, tree, commit, dirty, warnings}) => [name, {tree, commit, dirty, warnings}])),
    machine: await machine(),
    suites: {},
  }
  const scratch = mkdtempSync(join(tmpdir(), 'outbox-bench-compare-'))
  let failed = 0
  try {
    for (const suite of suites) {
      const runs = []
      report.suites[suite] = {runs, figures: [], error: undefined}
      try {
        for (let round = 1; round <= options.rounds; round++) {
          const pair = {round}
          // a pair's second run can meet what its first left behind (autovacuum, purge, dirty pages)
          const order = options.alternate && round % 2 === 0 ? [...sides].reverse() : sides
          for (const side of order) {
            log(`== compare ${suite}, round ${round}/${options.rounds}: ${side.name} (${side.tree})`)
            pair[side.name] = runSide(suite, side, options, scratch)
            log(`   ${side.name}: ${pair[side.name].headline.map((f) => `${f.key} ${f.value.toFixed(3)}`).join(', ')} (${pair[side.name].seconds.toFixed(0)} s)`)
          }
          runs.push(pair)
          report.suites[suite].figures = summarise(runs)
          write(report)
        }
      } catch (error) {
        failed++
        report.suites[suite].error = String(error?.message ?? error)
        console.error(`bench compare: ${report.suites[suite].error}`)
      }
      write(report)
    }
  } finally {
    rmSync(scratch, {recursive: true, force: true})
  }
  report.finishedAt = new Date().toISOString()
  write(report)
  log(`bench/results/compare.md and compare.json: ${suites.join(', ')}, ${options.rounds} round(s)${failed ? `, ${failed} suite(s) FAILED` : ''}`)
  return failed ? 1 : 0
}
