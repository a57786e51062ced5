#!/usr/bin/env node
// What bounds the relay's PostgreSQL drain (not a suite: run it by hand, after `npm run build`):
//   node bench/profile-relay.js [--events 20000] [--concurrency 4] [--batch 100] [--max-batch N] [--durable] [--graphile]
// Prints EXPLAIN (ANALYZE, BUFFERS) of the claim and the mark at the full backlog (in a
// transaction that is rolled back), then drains the backlog and counts, per statement kind,
// the round trips, their client-side time and the commits; also the WAL the drain wrote
// (pg_current_wal_lsn before and after, so other sessions' writes are included: noisy).
// --graphile drains the same number of graphile-worker jobs the same way, for comparison.
// Add `node --cpu-prof --cpu-prof-dir=/tmp/prof` for a CPU profile of the drain.
import pg from 'pg'
import {dropTables, freshTables, noopPublisher, seedPostgres} from './outbox.js'
import {dialectOf} from './lib-under-test.js'
import {ensurePgDatabase, lib, PG_URL} from './servers.js'

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? fallback : Number(process.argv[i + 1])
}
const n = arg('events', 20000)
const concurrency = arg('concurrency', 4)
const batch = arg('batch', 100)
// the most a claim grows to (the relay's default when not given)
const maxBatch = arg('max-batch', undefined)
const durable = process.argv.includes('--durable')
const graphile = process.argv.includes('--graphile')

// Every query any pg client in this process sends, by kind: count and client-side time.
const stats = new Map()
let counting = false
const kindOf = (text) => {
  const t = String(text ?? '').trim()
  if (/^WITH c AS MATERIALIZED/.test(t)) return 'claim'
  if (/SET published_at/.test(t)) return 'mark'
  return t.split(/\s+/).slice(0, 3).join(' ').slice(0, 60)
}
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (config, values, callback) {
  if (!counting || config?.submit) return query.call(this, config, values, callback)
  const kind = kindOf(typeof config === 'string' ? config : config.text)
  const started = performance.now()
  const done = () => {
    const s = stats.get(kind) ?? {count: 0, ms: 0}
    s.count++
    s.ms += performance.now() - started
    stats.set(kind, s)
  }
  // pg.Pool calls query(config, callback) or query(config, values, callback).
  const cb = typeof values === 'function' ? values : callback
  if (typeof cb === 'function') {
    const wrapped = (...a) => (done(), cb(...a))
    return typeof values === 'function' ? query.call(this, config, wrapped) : query.call(this, config, values, wrapped)
  }
  const result = query.call(this, config, values)
  result.then(done, done)
  return result
}

await ensurePgDatabase()
const admin = new pg.Client({connectionString: PG_URL})
await admin.connect()
const walBytes = async (fn) => {
  const before = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l
  const out = await fn()
  const after = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l
  const bytes = Number((await admin.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [after, before])).rows[0].d)
  return {...out, walBytes: bytes}
}
const report = (label, out) => {
  console.log(`\n${label}: ${n} events in ${out.ms.toFixed(0)} ms = ${((n / out.ms) * 1000).toFixed(0)}/s; WAL ${(out.walBytes / n).toFixed(0)} B/event`)
  for (const [kind, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(`  ${kind.padEnd(40)} ${String(s.count).padStart(6)} round trips, ${(s.ms / s.count).toFixed(2)} ms each (client side), ${s.ms.toFixed(0)} ms summed over connections`)
  }
  stats.clear()
}

if (graphile) {
  const {graphilePeer} = await import('./peers/graphile.js')
  const instance = await graphilePeer().open()
  await instance.prepare(n)
  const out = await walBytes(async () => {
    counting = true
    const r = await instance.drain(n)
    counting = false
    return r
  })
  report('graphile-worker', out)
  await instance.close()
} else {
  const db = await lib.openDb(PG_URL, {poolSize: concurrency + 1, asyncCommit: !durable})
  const names = await freshTables(db, 'prof')
  const fillfactor = arg('fillfactor', 0)
  if (fillfactor) await db.execute(lib.sql`ALTER TABLE ${lib.raw(dialectOf(db).render.table(names, 'outbox'))} SET (fillfactor = ${lib.raw(String(fillfactor))})`)
  await seedPostgres(db, names, n)
  const d = dialectOf(db)
  const explain = async (label, statement) => {
    const {text, params} = d.render.compile(statement)
    const client = new pg.Client({connectionString: PG_URL})
    await client.connect()
    await client.query('BEGIN')
    const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS, TIMING) ${text}`, params)
    await client.query('ROLLBACK')
    await client.end()
    console.log(`\n-- EXPLAIN (ANALYZE, BUFFERS) ${label}\n${plan.rows.map((r) => r['QUERY PLAN'].replace(/'\{[^}]{80,}\}'/, "'{...}'")).join('\n')}`)
  }
  const claimOptions = {batch, leaseMs: 60_000, owner: 'profile', ordering: 'none'}
  await explain(`claim at ${n} pending`, d.relay.claim(names, claimOptions).statement)
  const ids = (await db.query(lib.sql`SELECT id FROM ${lib.raw(d.render.table(names, 'outbox'))} ORDER BY created_at, id LIMIT ${batch}`)).map((r) => r.id)
  await explain(`mark of ${batch} at ${n} pending`, d.relay.markPublished(names, ids))
  if (process.argv.includes('--mid')) {
    // Half the backlog through the same claim and mark statements, then the claim again.
    for (let done = 0; done < n / 2; done += batch) {
      const claimed = await db.query(d.relay.claim(names, claimOptions).statement, {prepare: true})
      await db.execute(d.relay.markPublished(names, claimed.map((r) => r.id)), {prepare: true})
    }
    await explain(`claim at ${n / 2} pending, ${n / 2} published (no vacuum in between)`, d.relay.claim(names, claimOptions).statement)
    await explain(`the same claim again`, d.relay.claim(names, claimOptions).statement)
    await db.execute(lib.sql`SELECT count(*) FROM ${lib.raw(d.render.table(names, 'outbox'))} WHERE published_at IS NULL`)
    await explain(`the same claim after a count(*) of pending rows (a seq scan)`, d.relay.claim(names, claimOptions).statement)
    const vacuum = new pg.Client({connectionString: PG_URL})
    await vacuum.connect()
    vacuum.on('notice', (m) => console.log(`  VACUUM: ${m.message.split('\n').filter((l) => /removable|tuples:|index scan/.test(l)).join(' | ')}`))
    await vacuum.query(`VACUUM (VERBOSE) ${d.render.table(names, 'outbox')}`)
    await vacuum.end()
    await explain(`the same claim after VACUUM`, d.relay.claim(names, claimOptions).statement)
  }

  const relay = new lib.Relay({db, publisher: noopPublisher(), tables: names, batch, ...(maxBatch ? {maxBatch} : {}), concurrency, leaseMs: 60_000})
  const out = await walBytes(async () => {
    counting = true
    const started = performance.now()
    const result = await relay.drainOnce()
    const ms = performance.now() - started
    counting = false
    return {ms, batches: result.batches}
  })
  report(`relay (concurrency ${concurrency}, batch ${batch}, ${durable ? 'durable commits' : 'synchronous_commit = off'}), ${out.batches} batches`, out)
  await db.close()
  // Backends flush their table statistics when they exit.
  await new Promise((r) => setTimeout(r, 1500))
  const t = (await admin.query('SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = $1', [names.outbox])).rows[0]
  console.log(`  updates ${t.n_tup_upd} (claims, marks and the EXPLAINs' rolled-back ones), HOT ${t.n_tup_hot_upd} (${((100 * t.n_tup_hot_upd) / t.n_tup_upd).toFixed(0)}%)`)
  await admin.query(`DROP TABLE ${names.outbox}`)
}
await admin.end()
