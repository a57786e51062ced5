#!/usr/bin/env node
// Where a PostgreSQL relay drain's time goes beyond the raw loop's, layer by layer (not a suite:
// run it by hand after `npm run build`). Each mode drains the same freshly seeded table
// (4,000 events, batch 100, no-op publisher), modes rotated every round, and reports the
// median drain time and the Node process's CPU time (user + system) per drain:
//   raw         the relay suite's raw loop (pg Client, the dialect's statements, prepared)
//   pool        the same claims through a pg Pool (max 2) instead of one Client
//   db          the same claims through the library's Db (openDb: pool, TLS fallback, config cache)
//   claimBatch  claimBatch() in a loop: + the plan built per batch, rows made ClaimedEvents
//   relayStart  Relay.drainOnce with claimFrom 'start': + the loop, publish, settle, metrics
//   relay       Relay.drainOnce as shipped: + the low-water mark's statements
// Every pool is connected before the clock, as the raw loop's Client is.
//   node bench/relay-layers.js [--rounds 14] [--modes raw,db,relay]
import {randomUUID} from 'node:crypto'
import {loadavg} from 'node:os'
import {fmt, median} from './lib.js'
import {rawLoop, seed} from './suites/relay.js'
import {applyInit, claimBatch, dialectOf, DIALECTS, driver, openDb, raw, Relay, sql} from './lib-under-test.js'

const URL = process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const EVENTS = 4000
const option = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : process.argv[i + 1]
}
const d = DIALECTS.postgres
const pg = await driver('pg')
const noop = {name: 'noop', publish: async (events) => events.map(() => ({ok: true})), close: async () => {}}
const options = {batch: 100, leaseMs: 30_000, owner: 'bench-layers'}

/** The previous batch's mark as the relay carries it: ids, and the created_at span a millisecond wider. */
function markOf(events, createdAt) {
  let min = Infinity
  let max = -Infinity
  for (const e of events) {
    const t = createdAt(e).getTime()
    if (t < min) min = t
    if (t > max) max = t
  }
  return {ids: events.map((e) => e.id), createdAt: {from: new Date(min - 1), to: new Date(max + 1)}}
}

/** Claims until none come back; `claim(mark)` runs one claim carrying the previous batch's mark. */
async function loop(claim, createdAt) {
  let total = 0
  let mark
  const started = performance.now()
  for (;;) {
    const rows = await claim(mark)
    if (rows.length === 0) break
    mark = markOf(rows, createdAt)
    total += rows.length
  }
  return {total, ms: performance.now() - started}
}

const plan = (names, mark) => d.relay.claim(names, {...options, ...(mark ? {mark} : {})}).statement

async function connectedDb() {
  const db = await openDb(URL, {poolSize: 2})
  await Promise.all([db.query(sql`SELECT 1`), db.query(sql`SELECT 1`)])
  return db
}

const MODES = {
  raw: (names) => rawLoop('postgres', URL, names),
  async pool(names) {
    const pool = new pg.Pool({connectionString: URL, max: 2})
    await Promise.all([pool.query('SELECT 1'), pool.query('SELECT 1')])
    const result = await loop(async (mark) => {
      const claim = d.render.compile(plan(names, mark))
      return (await pool.query({name: mark ? 'layers_claim_mark' : 'layers_claim', text: claim.text, values: claim.params})).rows
    }, (row) => row.created_at)
    await pool.end()
    return result
  },
  async db(names) {
    const db = await connectedDb()
    const result = await loop((mark) => db.query(plan(names, mark), {prepare: true}), (row) => row.created_at)
    await db.close()
    return result
  },
  async claimBatch(names) {
    const db = await connectedDb()
    const result = await loop((mark) => claimBatch(db, names, {...options, ...(mark ? {mark} : {})}), (event) => event.createdAt)
    await db.close()
    return result
  },
  relayStart: (names) => drain(names, 'start'),
  relay: (names) => drain(names, undefined),
}

async function drain(names, claimFrom) {
  const db = await connectedDb()
  const started = performance.now()
  const result = await new Relay({db, publisher: noop, tables: names, batch: 100, maxBatch: 100, owner: options.owner, ...(claimFrom ? {claimFrom} : {})}).drainOnce()
  const ms = performance.now() - started
  await db.close()
  return {total: result.published, ms}
}

const modes = option('modes', Object.keys(MODES).join(',')).split(',')
const rounds = Number(option('rounds', 14))
const db = await openDb(URL)
const names = {outbox: `bench_layers_${randomUUID().slice(0, 8)}`, inbox: 'bench_layers_in', archive: 'bench_layers_ar'}
await applyInit(db, names, {inbox: false, archive: false})
const runs = Object.fromEntries(modes.map((m) => [m, []]))
const load = [loadavg()[0]]
try {
  for (const m of modes) {
    await seed(db, names, 2000) // warm-up: plans, prepared statements, file cache
    await MODES[m](names)
  }
  for (let i = 0; i < rounds; i++) {
    for (const m of modes.map((_, j) => modes[(i + j) % modes.length])) {
      await seed(db, names, EVENTS)
      await new Promise((resolve) => setTimeout(resolve, 250))
      const cpu = process.cpuUsage()
      const result = await MODES[m](names)
      const used = process.cpuUsage(cpu)
      if (result.total !== EVENTS) throw new Error(`${m}: ${result.total} of ${EVENTS} events`)
      runs[m].push({ms: result.ms, cpu: (used.user + used.system) / 1000})
    }
  }
} finally {
  await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(names, 'outbox'))}`)
  await db.close()
}
load.push(loadavg()[0])
const first = modes[0]
console.log(`${rounds} rounds of ${EVENTS} events, load ${fmt(load[0], 1)} -> ${fmt(load[1], 1)}; per drain, medians:`)
console.log(`| mode | drain (ms) | ${first} / mode, per round | Node CPU (ms) |`)
console.log('|---|---|---|---|')
for (const m of modes) {
  const ratio = median(runs[m].map((r, i) => runs[first][i].ms / r.ms))
  console.log(`| ${m} | ${fmt(median(runs[m].map((r) => r.ms)), 1)} | ${fmt(ratio, 3)} | ${fmt(median(runs[m].map((r) => r.cpu)), 1)} |`)
}
