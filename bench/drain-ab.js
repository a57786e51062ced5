#!/usr/bin/env node
// Relay drains on PostgreSQL, several configurations (and builds) interleaved: not a suite, run
// it by hand after `npm run build` to weigh a change to the relay's hot path.
//   node bench/drain-ab.js [--events 20000] [--rounds 5] CONFIG ...
// CONFIG: label:key=value,... with keys dist (a build's dist/, default this tree's), batch,
// maxBatch, c (concurrency), durable (no value), tx (leaseBy transaction), ff (the outbox's
// fillfactor, set before the seed), cpu (no value: the
// drain's CPU, Node's by group from a profile and its backends' from /proc, when PostgreSQL runs
// on this machine). Each drain runs in a
// process of its own (so two builds never share one), the configurations in a rotated order
// each round; prints each one's events/s, median (min-max), and its ratio to the first, per round.
import {spawnSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'

const self = fileURLToPath(import.meta.url)

if (process.argv[2] === '--child') {
  const o = JSON.parse(process.argv[3])
  const {lib, PG_URL, ensurePgDatabase} = await import('./servers.js')
  const {dropTables, freshTables, noopPublisher, seedPostgres} = await import('./outbox.js')
  const {warm} = await import('./peers/outbox.js')
  const {dialectOf} = await import('./lib-under-test.js')
  await ensurePgDatabase()
  const db = await lib.openDb(PG_URL, {poolSize: o.c + 1, asyncCommit: !o.durable})
  const names = await freshTables(db, 'ab')
  try {
    if (o.ff) await db.execute(lib.sql`ALTER TABLE ${lib.raw(dialectOf(db).render.table(names, 'outbox'))} SET (fillfactor = ${lib.raw(String(o.ff))})`)
    await seedPostgres(db, names, o.events)
    await warm(db, o.c + 1)
    const relay = new lib.Relay({db, publisher: noopPublisher(), tables: names, batch: o.batch, ...(o.maxBatch ? {maxBatch: o.maxBatch} : {}), concurrency: o.c, leaseMs: 60_000, ...(o.tx ? {leaseBy: 'transaction'} : {})})
    // the pool's backends (each connection answers one of these at once), for their CPU time
    const pids = o.cpu ? [...new Set((await Promise.all(Array.from({length: o.c + 1}, () => db.query(lib.sql`SELECT pg_backend_pid() AS pid, pg_sleep(0.02)`)))).map((r) => r[0].pid))] : []
    const serverCpu = () => pids.reduce((sum, pid) => sum + readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 13).reduce((a, b) => a + Number(b), 0), 0) * 10 // clock ticks of 10 ms
    const cpu0 = process.cpuUsage()
    const server0 = o.cpu ? serverCpu() : 0
    const started = performance.now()
    const drain = () => relay.drainOnce()
    const run = o.cpu ? await (await import('./cpu-share.js')).profiled(drain, () => ({first: started, last: performance.now()})) : {result: await drain()}
    const ms = performance.now() - started
    const {result} = run
    if (result.published !== o.events) throw new Error(`published ${result.published} of ${o.events}`)
    const node = process.cpuUsage(cpu0)
    const cpu = o.cpu ? {nodeMs: (node.user + node.system) / 1000, serverMs: serverCpu() - server0, groups: run.groups, top: (await import('./cpu-share.js')).topFunctions(run, 12)} : undefined
    process.stdout.write(JSON.stringify({ms, batches: result.batches, cpu}))
  } finally {
    await dropTables(db, names)
    await db.close()
  }
  process.exit(0)
}

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : Number(process.argv[i + 1])
}
const events = arg('events', 20000)
const rounds = arg('rounds', 5)
const configs = process.argv
  .slice(2)
  .filter((a, i, all) => a.includes(':') && !['--events', '--rounds'].includes(all[i - 1]))
  .map((spec) => {
    const [label, rest = ''] = spec.split(/:(.*)/)
    const o = {label, batch: 100, c: 1, events}
    for (const kv of rest.split(',').filter(Boolean)) {
      const [k, v] = kv.split('=')
      o[k] = v === undefined ? true : k === 'dist' ? v : Number(v)
    }
    return o
  })
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const rates = configs.map(() => [])
console.log(`load ${loadavg()[0].toFixed(1)}`)
for (let round = 0; round < rounds; round++) {
  for (let k = 0; k < configs.length; k++) {
    const i = (k + round) % configs.length
    const {dist, ...o} = configs[i]
    const child = spawnSync(process.execPath, [self, '--child', JSON.stringify(o)], {encoding: 'utf8', env: {...process.env, ...(dist ? {OUTBOX_BENCH_DIST: dist} : {})}})
    if (child.status !== 0) throw new Error(`${o.label}: ${child.stderr}`)
    const {ms, batches, cpu} = JSON.parse(child.stdout)
    rates[i][round] = (events / ms) * 1000
    console.log(`round ${round + 1} ${o.label}: ${rates[i][round].toFixed(0)}/s, ${batches} batches`)
    if (cpu) {
      console.log(`  CPU: node ${cpu.nodeMs.toFixed(0)} ms, server backends ${cpu.serverMs.toFixed(0)} ms, of ${ms.toFixed(0)} ms wall`)
      for (const [g, t] of Object.entries(cpu.groups).sort((a, b) => b[1] - a[1])) console.log(`    ${g.padEnd(50)} ${t.toFixed(0)} ms`)
      for (const [f, t] of cpu.top) console.log(`    top ${f.padEnd(80)} ${t.toFixed(1)} ms`)
    }
  }
}
console.log(`load ${loadavg()[0].toFixed(1)}`)
for (let i = 0; i < configs.length; i++) {
  const ratio = rates[i].map((r, j) => r / rates[0][j])
  console.log(`${configs[i].label.padEnd(24)} ${median(rates[i]).toFixed(0)}/s (${Math.min(...rates[i]).toFixed(0)}-${Math.max(...rates[i]).toFixed(0)})  x${median(ratio).toFixed(2)} (${Math.min(...ratio).toFixed(2)}-${Math.max(...ratio).toFixed(2)}) of ${configs[0].label}`)
}
