#!/usr/bin/env node
// The relay's writes per event, candidate by candidate (not a suite: run it by hand, after
// `npm run build`):
//   node bench/profile-writes.js [--events 20000] [--concurrency 1] [--rounds 3] [--modes a,b]
// Each round drains the same backlog once per mode, the modes interleaved (order rotated each
// round), durable commits (the server default). Per mode: drain ms, WAL bytes per event
// (pg_current_wal_lsn before/after: other sessions' writes are included, noisy), and the
// table's updates and HOT share from pg_stat_user_tables (read after the backends exit).
//   row          today's claim through the library's statements in a raw loop: the lease
//                UPDATE at claim, the mark carried by the next claim (one commit per batch)
//   row-ff50     the same with the outbox's fillfactor at 50 (today: 80); any -ffNN suffix
//                sets that fillfactor (relay-ff40, ...)
//   ...-nopubix  the published_at index dropped before seeding (what its entry per mark costs)
//   ...-nocreatedix  the created_at index dropped (what its entry per new version costs)
//   relay        today's Relay.drainOnce() (the shipped loop, durable)
//   relay-tx     Relay.drainOnce() with leaseBy 'transaction' (the tx-2rt statements in the relay)
//   relay-ff50   Relay.drainOnce() on an outbox at fillfactor 50
//   tx-pipe      tx-2rt with the next claim sent on a second connection during the mark + COMMIT
//   tx-2rt-async tx-2rt with SET LOCAL synchronous_commit = off (what the WAL flush costs)
//   tx           the lease is the claim transaction's row lock: BEGIN; SELECT ... FOR UPDATE
//                SKIP LOCKED LIMIT n; (publish); UPDATE mark; COMMIT, four round trips
//   tx-2rt       the same in two simple-protocol round trips: "BEGIN; SELECT ..." then
//                "UPDATE ...; COMMIT" (values inlined)
// --no-checkpoint: no CHECKPOINT before each drain (as the peers suite: the seed's full-page
// images are written before timing). --wal-detail: WAL by record type (pg_walinspect, created
// in the benchmark database if missing). --explain: the drains' own statements logged by
// auto_explain (ANALYZE, BUFFERS, WAL) into the server's log, loaded for our sessions only.
import pg from 'pg'
import {freshTables, noopPublisher, seedPostgres} from './outbox.js'
import {dialectOf} from './lib-under-test.js'
import {ensurePgDatabase, lib, PG_URL} from './servers.js'

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : process.argv[i + 1]
}
const n = Number(arg('events', 20000))
const concurrency = Number(arg('concurrency', 1))
const rounds = Number(arg('rounds', 3))
const batch = Number(arg('batch', 100))
const modes = arg('modes', 'row,row-ff50,tx,tx-2rt').split(',')
const flag = (name) => process.argv.includes(`--${name}`)
const checkpoint = !flag('no-checkpoint')
const walDetail = flag('wal-detail')
const explain = flag('explain')
const EXPLAIN_OPTIONS = '-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 -c auto_explain.log_analyze=on -c auto_explain.log_buffers=on -c auto_explain.log_wal=on -c auto_explain.log_nested_statements=on'

await ensurePgDatabase()
const admin = new pg.Client({connectionString: PG_URL})
await admin.connect()
const lsn = async () => (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l
const COLS = 'id, event_type, aggregate_type, aggregate_id, aggregate_version, payload::text AS payload, headers::text AS headers, created_at, attempts'
const claimable = 'published_at IS NULL AND failed_at IS NULL AND (lease_until IS NULL OR lease_until < now())'
const markSql = (t) => `UPDATE ${t} SET published_at = now(), lease_owner = NULL, lease_until = NULL, failed_at = NULL WHERE id = ANY($1::uuid[]) AND published_at IS NULL`
const uuidArray = (ids) => `'{${ids.join(',')}}'::uuid[]`

async function clients(k) {
  return Promise.all(Array.from({length: k}, async () => {
    const c = new pg.Client({connectionString: PG_URL})
    await c.connect()
    return c
  }))
}

/** today's statements (claim carrying the mark) in a raw loop per connection */
async function drainRow(db, names, t) {
  const d = dialectOf(db)
  const loop = async () => {
    let mark
    for (;;) {
      const rows = await db.query(d.relay.claim(names, {batch, leaseMs: 60_000, owner: 'p', ordering: 'none', ...(mark ? {mark} : {})}).statement, {prepare: true})
      if (rows.length === 0) return
      mark = {ids: rows.map((r) => r.id)}
    }
  }
  await Promise.all(Array.from({length: concurrency}, loop))
}

async function drainTx(cs, t, twoTrips, asyncCommit) {
  const select = `SELECT ${COLS} FROM ${t} WHERE ${claimable} ORDER BY created_at, id LIMIT ${batch} FOR UPDATE SKIP LOCKED`
  const loop = async (c) => {
    for (;;) {
      let rows
      const t0 = performance.now()
      if (twoTrips) rows = (await c.query(`BEGIN;${asyncCommit ? ' SET LOCAL synchronous_commit = off;' : ''} ${select}`)).at(-1).rows
      else {
        await c.query('BEGIN')
        rows = (await c.query({text: select, name: `s${t}`})).rows
      }
      if (rows.length === 0) {
        await c.query('COMMIT')
        return
      }
      const ids = rows.map((r) => r.id)
      const t1 = performance.now()
      claimMs += t1 - t0
      if (twoTrips) await c.query(`${markSql(t).replace('$1::uuid[]', uuidArray(ids))}; COMMIT`)
      else {
        await c.query({text: markSql(t), name: `m${t}`, values: [ids]})
        await c.query('COMMIT')
      }
      markMs += performance.now() - t1
    }
  }
  let claimMs = 0
  let markMs = 0
  await Promise.all(cs.map(loop))
  console.log(`  claim scripts ${claimMs.toFixed(0)} ms, mark + commit scripts ${markMs.toFixed(0)} ms (summed over loops)`)
}

/** tx-2rt, with the next batch's claim sent on a second connection while this batch's mark + COMMIT runs */
async function drainTxPipelined(cs, t) {
  const select = `SELECT ${COLS} FROM ${t} WHERE ${claimable} ORDER BY created_at, id LIMIT ${batch} FOR UPDATE SKIP LOCKED`
  const claim = async (c) => (await c.query(`BEGIN; ${select}`))[1].rows
  const loop = async ([a, b]) => {
    let cur = a
    let other = b
    let rows = await claim(cur)
    for (;;) {
      if (rows.length === 0) return cur.query('COMMIT')
      const ids = rows.map((r) => r.id)
      const [, next] = await Promise.all([cur.query(`${markSql(t).replace('$1::uuid[]', uuidArray(ids))}; COMMIT`), claim(other)])
      rows = next
      ;[cur, other] = [other, cur]
    }
  }
  const pairs = []
  for (let i = 0; i < cs.length; i += 2) pairs.push([cs[i], cs[i + 1]])
  await Promise.all(pairs.map(loop))
}

const results = Object.fromEntries(modes.map((m) => [m, []]))
const relayUrl = explain ? `${PG_URL}?options=${encodeURIComponent(EXPLAIN_OPTIONS)}` : PG_URL
const db = await lib.openDb(relayUrl, {poolSize: concurrency + 1})
if (walDetail) await admin.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect')
await admin.query('CREATE EXTENSION IF NOT EXISTS pg_freespacemap').catch(() => {})
/** WAL between two LSNs by record type, the largest first */
async function walByRecord(from, to) {
  const {rows} = await admin.query(
    `SELECT "resource_manager/record_type" AS kind, count, record_size, fpi_size FROM pg_get_wal_stats($1, $2, true) WHERE count > 0 ORDER BY record_size + fpi_size DESC LIMIT 10`,
    [from, to],
  )
  return rows.map((r) => `${r.kind} ${r.count}x ${((Number(r.record_size) + Number(r.fpi_size)) / n).toFixed(0)} B/ev${Number(r.fpi_size) ? ` (fpi ${(Number(r.fpi_size) / n).toFixed(0)})` : ''}`).join('; ')
}
const cs = await clients(concurrency * 2)
for (let round = 0; round < rounds; round++) {
  const order = modes.map((_, i) => modes[(i + round) % modes.length])
  for (const mode of order) {
    const names = await freshTables(db, 'pw')
    const t = dialectOf(db).render.table(names, 'outbox')
    const ff = /-ff(\d+)/.exec(mode)
    if (ff) await admin.query(`ALTER TABLE ${t} SET (fillfactor = ${Number(ff[1])})`)
    if (mode.includes('-nopubix')) await admin.query(`DROP INDEX ${names.outbox}_published_idx`)
    if (mode.includes('-nocreatedix')) await admin.query(`DROP INDEX ${names.outbox}_created_at_idx`)
    await seedPostgres(db, names, n)
    if (checkpoint) await admin.query('CHECKPOINT').catch(() => {}) // full-page images after a checkpoint would land on whoever runs first
    const before = await lsn()
    const started = performance.now()
    if (mode.startsWith('row')) await drainRow(db, names, t)
    else if (mode.startsWith('relay')) await new lib.Relay({db, publisher: noopPublisher(), tables: names, batch, concurrency, leaseMs: 60_000, ...(mode.startsWith('relay-tx') ? {leaseBy: 'transaction'} : {})}).drainOnce()
    else if (mode === 'tx-pipe') await drainTxPipelined(cs, t)
    else await drainTx(cs.slice(0, concurrency), t, mode.startsWith('tx-2rt'), mode.endsWith('-async'))
    const ms = performance.now() - started
    const after = await lsn()
    const wal = Number((await admin.query('SELECT pg_wal_lsn_diff($2, $1) AS d', [before, after])).rows[0].d)
    if (walDetail) console.log(`  WAL ${mode}: ${await walByRecord(before, (await admin.query('SELECT pg_current_wal_flush_lsn() AS l')).rows[0].l)}`)
    const left = Number((await admin.query(`SELECT count(*) AS c FROM ${t} WHERE published_at IS NULL`)).rows[0].c)
    const heapPages = async () => Number((await admin.query(`SELECT pg_relation_size('${t}') / 8192 AS p`)).rows[0].p)
    const pages = await heapPages()
    await admin.query(`VACUUM ${t}`)
    const afterVacuum = Number((await admin.query(`SELECT count(*) FILTER (WHERE avail > 4096) AS p FROM pg_freespace('${t}')`).catch(() => ({rows: [{p: NaN}]}))).rows[0].p)
    await new Promise((r) => setTimeout(r, 2500)) // stats reach pg_stat after a backend's idle flush (PG15: up to 1 s)
    const s = (await admin.query(`SELECT pg_stat_force_next_flush()`).catch(() => null), (await admin.query('SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1', [names.outbox])).rows[0])
    results[mode].push({ms, wal: wal / n, upd: Number(s.n_tup_upd), hot: Number(s.n_tup_hot_upd), left, pages})
    console.log(`round ${round + 1} ${mode.padEnd(9)} ${ms.toFixed(0).padStart(6)} ms  WAL ${(wal / n).toFixed(0)} B/event  updates ${s.n_tup_upd} HOT ${s.n_tup_hot_upd}  left ${left}  heap ${pages} pages (${afterVacuum} over half free after VACUUM)`)
    await admin.query(`DROP TABLE ${t}`)
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`\nconcurrency ${concurrency}, batch ${batch}, ${n} events, ${rounds} rounds, durable commits; load ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`)
for (const m of modes) {
  const r = results[m]
  console.log(`${m.padEnd(9)} median ${med(r.map((x) => x.ms)).toFixed(0)} ms (${Math.min(...r.map((x) => x.ms)).toFixed(0)}-${Math.max(...r.map((x) => x.ms)).toFixed(0)}), WAL ${med(r.map((x) => x.wal)).toFixed(0)} B/event, HOT ${med(r.map((x) => (100 * x.hot) / Math.max(1, x.upd))).toFixed(0)}% of ${med(r.map((x) => x.upd))} updates`)
}
await Promise.all(cs.map((c) => c.end()))
await db.close()
await admin.end()
