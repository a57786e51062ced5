#!/usr/bin/env node
// The relay's SQLite drain against the raw loop's, by CPU and by instructions (not a suite: run
// it by hand, after `npm run build`). SQLite runs in process, so a drain's CPU is all its work;
// wall time on this shared machine is noise, an instruction count is not.
//   node bench/sqlite-drain.js [--events 10000] [--pairs 4]
//     interleaved raw/relay drains (bench/suites/relay.js's rawLoop and relayRun) of a freshly
//     seeded table in one process: each drain's user+system CPU, relay/raw per pair
//   node bench/sqlite-drain.js --callgrind [--events 10000] [--pairs 2] [--top 40]
//     the same under `valgrind --tool=callgrind`, one dump per drain (process.cpuUsage() calls
//     uv_getrusage at each drain's start and end: --dump-before=uv_getrusage): instructions
//     per drain, relay/raw, and where the relay's extra instructions are, function by function
//     (JIT-compiled JavaScript named through node --perf-basic-prof's /tmp/perf-<pid>.map).
//     --no-memory-reducer: under valgrind a drain lasts half a minute, long enough for V8's
//     timed memory reducer to start a full GC inside it (only in the relay's drains, which give
//     the event loop its turns), which natively (--trace-gc) never happens in a drain
// OUTBOX_BENCH_DIST measures another build (bench/tree.js).
import {spawnSync} from 'node:child_process'
import {mkdtempSync, readdirSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fmt, median} from './lib.js'
import {functionCosts, totalOf} from './callgrind.js'

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : Number(process.argv[i + 1])
}
const events = arg('events', 10000)

if (process.argv.includes('--callgrind')) callgrind()
else await drains(arg('pairs', 4))

/** Warm-up, then `pairs` raw/relay pairs (order swapped every pair); one JSON line per drain. */
async function drains(pairs) {
  const {applyInit, openDb} = await import('./lib-under-test.js')
  const {sqliteUrl} = await import('./servers.js')
  const {rawLoop, relayRun, seed} = await import('./suites/relay.js')
  const url = sqliteUrl()
  const db = await openDb(url)
  const names = {outbox: 'bench_drain', inbox: 'bench_drain_in', archive: 'bench_drain_ar'}
  await applyInit(db, names, {inbox: false, archive: false})
  const run = (which) => (which === 'raw' ? rawLoop('sqlite', url, names) : relayRun(url, names, 1))
  // warm-up: enough batches that the relay's functions are compiled before the drains counted
  for (let i = 0; i < 6; i++) {
    const which = i % 2 ? 'relay' : 'raw'
    await seed(db, names, Math.min(events, 2000))
    await run(which)
  }
  const cpu = {raw: [], relay: []}
  for (let i = 0; i < pairs; i++) {
    for (const which of i % 2 ? ['relay', 'raw'] : ['raw', 'relay']) {
      await seed(db, names, events)
      const before = process.cpuUsage() // callgrind: a dump here
      const result = await run(which)
      const used = process.cpuUsage(before) // and here
      if (result.total !== events) throw new Error(`${which}: drained ${result.total} of ${events}`)
      const ms = (used.user + used.system) / 1000
      cpu[which].push(ms)
      console.log(JSON.stringify({which, cpuMs: ms, userMs: used.user / 1000, systemMs: used.system / 1000, wallMs: result.ms}))
    }
  }
  await db.close()
  const ratios = cpu.relay.map((ms, i) => ms / cpu.raw[i])
  console.error(`CPU per drain, median: raw ${fmt(median(cpu.raw))} ms, relay ${fmt(median(cpu.relay))} ms; relay/raw per pair ${ratios.map((r) => fmt(r, 2)).join(' ')} (median ${fmt(median(ratios), 2)})`)
}

/** Runs drains() under callgrind, then reads one dump per drain. */
function callgrind() {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-callgrind-'))
  const pairs = arg('pairs', 2)
  const child = spawnSync(
    'valgrind',
    ['--tool=callgrind', '--dump-before=uv_getrusage', `--callgrind-out-file=${join(dir, 'cg.%p')}`, process.execPath, '--perf-basic-prof', '--no-memory-reducer', new URL(import.meta.url).pathname, '--events', String(events), '--pairs', String(pairs)],
    // cwd: the V8 log files --perf-basic-prof leaves go with the dumps
    {cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26},
  )
  if (child.status !== 0) throw new Error(`valgrind exited ${child.status}: ${child.stderr.slice(-2000)}`)
  process.stderr.write(child.stderr.split('\n').filter((l) => !l.startsWith('==')).join('\n'))
  const order = child.stdout.trim().split('\n').map((l) => JSON.parse(l).which)
  const pid = readdirSync(dir).find((f) => /^cg\.\d+$/.test(f)).slice(3)
  // parts 1, 2, ...: before drain 1, drain 1, between drains 1 and 2, drain 2, ...
  const part = (k) => join(dir, `cg.${pid}.${k}`)
  const perfMap = `/tmp/perf-${pid}.map`
  const drained = order.map((which, i) => ({which, file: part(2 * i + 2)}))
  const counts = {raw: [], relay: []}
  for (const d of drained) counts[d.which].push(totalOf(readFileSync(d.file, 'utf8')))
  const ratios = counts.relay.map((n, i) => n / counts.raw[i])
  console.log(`${events} events a drain, ${pairs} pairs; instructions per drain (millions):`)
  console.log(`  raw   ${counts.raw.map((n) => fmt(n / 1e6, 1)).join(' ')}`)
  console.log(`  relay ${counts.relay.map((n) => fmt(n / 1e6, 1)).join(' ')}`)
  console.log(`  relay/raw per pair ${ratios.map((r) => fmt(r, 3)).join(' ')} (median ${fmt(median(ratios), 3)}); per batch, relay - raw: ${fmt((median(counts.relay) - median(counts.raw)) / (events / 100) / 1000, 0)} k instructions`)
  // where: each function's self instructions, every drain by kind, then the last raw and relay drains by function
  const perf = readFileSync(perfMap, 'utf8')
  const costs = drained.map((d) => functionCosts(readFileSync(d.file, 'utf8'), perf))
  const perBatch = (n) => fmt(n / (events / 100) / 1000, 1)
  const byKind = costs.map((c) => {
    const kinds = new Map()
    for (const [name, n] of c) kinds.set(groupOf(name), (kinds.get(groupOf(name)) ?? 0) + n)
    return kinds
  })
  const kinds = [...new Set(byKind.flatMap((k) => [...k.keys()]))]
  console.log(`\nself instructions per batch (thousands) by kind, each drain in order:`)
  console.log(`  ${drained.map((d) => d.which.padStart(8)).join('')}`)
  for (const kind of kinds) console.log(`  ${byKind.map((k) => perBatch(k.get(kind) ?? 0).padStart(8)).join('')}  ${kind}`)
  const last = (which) => costs[drained.map((d) => d.which).lastIndexOf(which)]
  const raw = last('raw')
  const relay = last('relay')
  const names = new Set([...raw.keys(), ...relay.keys()])
  const rows = [...names].map((name) => ({name, raw: raw.get(name) ?? 0, relay: relay.get(name) ?? 0})).sort((a, b) => b.relay - b.raw - (a.relay - a.raw))
  console.log(`\nself instructions per batch (thousands), the last drain of each, by the relay's excess:`)
  for (const r of rows.slice(0, arg('top', 40))) console.log(`  ${perBatch(r.relay - r.raw).padStart(8)}  raw ${perBatch(r.raw).padStart(7)}  relay ${perBatch(r.relay).padStart(7)}  ${r.name.slice(0, 110)}`)
  if (process.argv.includes('--keep')) {
    console.log(`dumps kept in ${dir} (drain i, from 1: part 2i), perf map ${perfMap}`)
    return
  }
  rmSync(dir, {recursive: true, force: true})
  rmSync(perfMap, {force: true})
}

/** A rough kind for a function: SQLite, JavaScript, V8's builtins, its garbage collector, ... */
function groupOf(name) {
  if (name.startsWith('JS: ')) return 'JIT-compiled JavaScript'
  if (name.startsWith('better_sqlite3.node')) return 'better-sqlite3 + SQLite'
  if (/Builtins_|Builtin/.test(name)) return 'V8 builtins (interpreter, Array/Promise/String ...)'
  if (/Heap|Scaveng|Mark|Sweep|GC|Evacuat|Remembered|Slot/.test(name)) return 'V8 garbage collection'
  if (/Runtime_|v8::internal/.test(name)) return 'V8 runtime (C++)'
  if (/libc|ld-linux/.test(name)) return 'libc'
  if (/^node: (node|uv_|v8::)/.test(name)) return 'node / libuv / v8 API'
  return name.startsWith('node: 0x') || name.startsWith('???') ? 'code without a symbol (JIT not in the perf map)' : 'other'
}
