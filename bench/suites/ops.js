// outbox status / replay / archive at scale.
// 1. status time on tables of growing size with the same small backlog (only history grows):
//    status must read the pending rows, the failed rows and the window, never the history.
// 2. archive and replay throughput (batched, each batch one transaction) against one bulk
//    transaction doing the same work in the same run; the longest batch; peak RSS at 100k vs 1M.
import {execFileSync} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {applyInit, databaseNow, openDb, raw, readStatus, sql, statusRowsRead} from '../../dist/src/index.js'
import {fmt, summary} from '../lib.js'

const PG = process.env.OUTBOX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const MYSQL = process.env.OUTBOX_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const root = new URL('../..', import.meta.url).pathname

export const names = (tag) => ({outbox: `bench_ops_${tag}`, inbox: `bench_ops_${tag}_in`, archive: `bench_ops_${tag}_ar`})

// ---- bulk loading (INSERT ... SELECT from a series, never row by row) ----
// History: published 1 s after creation, created 3+ days ago, 10 ms apart. Row i is i * 10 ms
// older than row 1, and rows are laid down the way the producer writes them: ids time-ordered
// like its UUIDv7 (ID_TOP - i, so they ascend with created_at) and inserted oldest first.
const ID_TOP = 0xffffffffff
// Backlog: 1000 pending (200 in flight, 100 lapsed leases, 100 retrying), 50 failed, 1000
// published over the last 30 minutes.
const HISTORY = {
  postgres: (t, from, to) => sql`INSERT INTO ${raw(t)} (id, event_type, aggregate_id, payload, created_at, published_at, attempts)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(${raw(String(ID_TOP))} - i), 12, '0'))::uuid, 'type' || (i % 4), 'agg-' || (i % 1000), '{"n":1}'::jsonb,
  now() - interval '3 days' - i * interval '10 milliseconds', now() - interval '3 days' - i * interval '10 milliseconds' + interval '1 second', 1
FROM generate_series(${raw(String(to))}, ${raw(String(from))}, -1) i`,
  mysql: (t, from, to) => sql`INSERT INTO ${raw(t)} (id, event_type, aggregate_id, payload, created_at, published_at, attempts)
SELECT CONCAT('00000000-0000-7000-8000-', LPAD(LOWER(HEX(${raw(String(ID_TOP))} - seq)), 12, '0')), CONCAT('type', seq % 4), CONCAT('agg-', seq % 1000), '{"n":1}',
  UTC_TIMESTAMP(6) - INTERVAL 3 DAY - INTERVAL seq * 10000 MICROSECOND, UTC_TIMESTAMP(6) - INTERVAL 3 DAY - INTERVAL seq * 10000 MICROSECOND + INTERVAL 1 SECOND, 1
FROM seq_${raw(String(to))}_to_${raw(String(from))}`,
  sqlite: (t, from, to) => sql`WITH RECURSIVE s(i) AS (SELECT ${raw(String(to))} UNION ALL SELECT i - 1 FROM s WHERE i > ${raw(String(from))})
INSERT INTO ${raw(t)} (id, event_type, aggregate_id, payload, created_at, published_at, attempts)
SELECT printf('00000000-0000-7000-8000-%012x', ${raw(String(ID_TOP))} - i), 'type' || (i % 4), 'agg-' || (i % 1000), '{"n":1}',
  strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-3 days', printf('-%.3f seconds', i * 0.01)),
  strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-3 days', printf('%+.3f seconds', 1 - i * 0.01)), 1 FROM s`,
}

export async function loadHistory(db, n, from, to) {
  const t = db.dialect.render.table(n, 'outbox')
  const step = db.dialect.name === 'sqlite' ? 500_000 : 1_000_000
  for (let a = from; a <= to; a += step) {
    const b = Math.min(to, a + step - 1)
    if (db.dialect.name === 'sqlite') await db.transaction((tx) => tx.execute(HISTORY.sqlite(t, a, b)))
    else await db.execute(HISTORY[db.dialect.name](t, a, b))
  }
  await analyze(db, n)
}

export async function loadBacklog(db, n) {
  const t = raw(db.dialect.render.table(n, 'outbox'))
  const now = await databaseNow(db)
  const at = (s) => (s === null ? null : db.dialect.render.timeParam(new Date(now.getTime() + s * 1000)))
  const rows = []
  for (let i = 0; i < 1000; i++) {
    const lease = i < 200 ? ['relay', 600, 1] : i < 300 ? ['relay', -60, 1] : i < 400 ? [null, 30, 2] : [null, null, 0]
    rows.push({created: -1200 + i, published: null, failed: null, lease})
  }
  for (let i = 0; i < 50; i++) rows.push({created: -5000 + i, published: null, failed: -100, lease: [null, null, 5]})
  for (let i = 0; i < 1000; i++) rows.push({created: -1800 + i, published: -1800 + i + (i % 10) / 10, failed: null, lease: [null, null, 1]})
  await db.transaction(async (tx) => {
    for (const [i, r] of rows.entries()) {
      const id = `10000000-0000-7000-8000-${i.toString(16).padStart(12, '0')}`
      await tx.execute(sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at, published_at, failed_at, lease_owner, lease_until, attempts)
VALUES (${id}, ${`type${i % 4}`}, ${`agg-${i}`}, '{"n":1}', ${at(r.created)}, ${at(r.published)}, ${at(r.failed)}, ${r.lease[0]}, ${at(r.lease[1])}, ${r.lease[2]})`)
    }
  })
}

// PostgreSQL: VACUUM too, as autovacuum would in production. Without it a freshly loaded table
// has no visibility map (index-only scans visit the heap) and an insert-triggered autovacuum
// starts during whatever is measured next (seen: status on 10M rows at 14.9 ms against 3.8-4.8).
async function analyze(db, n) {
  const t = raw(db.dialect.render.table(n, 'outbox'))
  if (db.dialect.name === 'mysql') await db.query(sql`ANALYZE TABLE ${t}`)
  else if (db.dialect.name === 'postgres') await db.execute(sql`VACUUM (ANALYZE) ${t}`)
  else await db.execute(sql`ANALYZE ${t}`)
}

export async function fresh(db, n) {
  for (const which of ['outbox', 'inbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(n, which))}`)
  await applyInit(db, n, {inbox: false, archive: true})
}

async function time(fn) {
  const t = performance.now()
  await fn()
  return performance.now() - t
}

// ---- 1. status scaling ----
export async function statusScaling(url, sizes, runs, log) {
  const db = await openDb(url)
  const n = names(`st_${randomBytes(2).toString('hex')}`)
  const rows = []
  try {
    await fresh(db, n)
    await loadBacklog(db, n)
    let loaded = 0
    for (const size of sizes) {
      const loadMs = await time(() => loadHistory(db, n, loaded + 1, size))
      loaded = size
      const settleMs = await time(() => settle(db))
      await readStatus(db, n, {windowMs: 3_600_000}) // warm the cache
      const plain = []
      const byType = []
      for (let i = 0; i < runs; i++) {
        plain.push(await time(() => readStatus(db, n, {windowMs: 3_600_000})))
        byType.push(await time(() => readStatus(db, n, {windowMs: 3_600_000, byType: true})))
      }
      const check = await readStatus(db, n, {windowMs: 3_600_000})
      const read = await rowsRead(db, n)
      rows.push({dialect: db.dialect.name, rows: size + 2050, plain: summary(plain), byType: summary(byType), pending: check.pending, published: check.published, rowsRead: read})
      log(`${db.dialect.name} status at ${size}: ${fmt(summary(plain).median)} ms (by type ${fmt(summary(byType).median)} ms), rows read ${read ?? 'n/a'}, load ${fmt(loadMs / 1000)} s, settled in ${fmt(settleMs / 1000)} s`)
    }
  } finally {
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(n, which))}`)
    await db.close()
  }
  return rows
}

/** Rows the status statements (plain, not --by type) read from the table, as the server counts them; null on SQLite. */
async function rowsRead(db, n) {
  const now = await databaseNow(db)
  const rows = await statusRowsRead(db, n, {windowMs: 3_600_000}, now)
  return rows ? Object.values(rows).reduce((a, b) => a + b, 0) : null
}

// After a load of millions of rows the server is still writing them out (MariaDB's page cleaner
// flushed for tens of seconds after the 10M load, and status read 4.7-7.3 ms meanwhile against
// 4.3 at 100k): let it finish, as it would have long before anyone runs status in production.
// MariaDB keeps pages dirty below innodb_max_dirty_pages_pct, so "done" is the flushing stopping.
async function settle(db) {
  if (db.dialect.name === 'postgres') await db.execute(sql`CHECKPOINT`)
  if (db.dialect.name === 'sqlite') await db.query(sql`PRAGMA wal_checkpoint(TRUNCATE)`)
  if (db.dialect.name !== 'mysql') return
  const flushed = async () =>
    Number((await db.query(sql`SELECT VARIABLE_VALUE AS n FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_FLUSHED'`))[0]?.n)
  let before = await flushed()
  for (let waited = 0; waited < 120_000; waited += 1000) {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const now = await flushed()
    if (now - before < 20) return
    before = now
  }
}

// ---- 2. throughput: batched (child process) vs one bulk transaction ----
function child(op, url, n, options, nodeFlags = [], gcEvery = undefined) {
  const out = execFileSync(process.execPath, [...nodeFlags, `${root}bench/ops-child.js`, JSON.stringify({op, url, names: n, options, gcEvery})], {encoding: 'utf8', maxBuffer: 1 << 20})
  return JSON.parse(out.trim().split('\n').pop())
}

const COLS = 'id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at, published_at, attempts, lease_owner, lease_until, last_error, failed_at'

function bulkArchive(db, n, beforeParam, publishedParam) {
  const o = raw(db.dialect.render.table(n, 'outbox'))
  const a = raw(db.dialect.render.table(n, 'archive'))
  const where = sql`created_at < ${beforeParam} AND published_at IS NOT NULL AND failed_at IS NULL AND published_at < ${publishedParam}`
  return db.transaction(async (tx) => {
    await tx.execute(sql`INSERT INTO ${a} (${raw(COLS)}, archived_at) SELECT ${raw(COLS)}, ${raw(db.dialect.render.now)} FROM ${o} WHERE ${where}`)
    return tx.execute(sql`DELETE FROM ${o} WHERE ${where}`)
  })
}

function bulkReplay(db, n, sinceParam) {
  const o = raw(db.dialect.render.table(n, 'outbox'))
  return db.transaction((tx) =>
    tx.execute(sql`UPDATE ${o} SET published_at = NULL, failed_at = NULL, lease_owner = NULL, lease_until = NULL, last_error = NULL, attempts = 0 WHERE created_at >= ${sinceParam}`),
  )
}

// ---- InnoDB purge: work a bulk statement leaves behind ----
// InnoDB removes old row versions and delete-marked records after commit, in background purge
// threads. A bulk UPDATE or DELETE of 1M rows commits first and is purged afterwards (seen:
// ~5 s of purge after a 7 s bulk replay); a batched run's earlier batches are purged while it
// runs. That purge is not what slows the run (purgeHeldOff; 2026-12-04, 500k rows: a batched
// replay ran 64.6k and 71.8k rows/s with the purge held off against 62.7k and 70.1k beside it).
// The run does more than the bulk per row: per 1000-row batch its summary read (server temp
// tables for the CTE, the window's sort and the GROUP BY; ~2,000 buffer-pool page requests) and
// its UPDATE (~7,800, about the bulk's own per-row cost). The History list length (undo
// logs not yet purged) is back to 0 when the purge is done. Returns the ms waited (null: not
// MySQL, or not done in 120 s, e.g. another session's open read view holds it).
async function purgeWait(db) {
  if (db.dialect.name !== 'mysql') return null
  const started = performance.now()
  while (performance.now() - started < 120_000) {
    if ((await historyLength(db)) === 0) return performance.now() - started
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return null
}

export async function throughput(url, size, runs, batch, log) {
  const db = await openDb(url)
  const n = names(`tp_${randomBytes(2).toString('hex')}`)
  const figures = () => ({batched: [], bulk: [], ratio: [], maxBatchMs: [], rssMb: [], purgeMs: {batched: [], bulk: []}, ratioWithPurge: []})
  const out = {dialect: db.dialect.name, rows: size, batch, archive: figures(), replay: figures(), bulkTxMs: {archive: [], replay: []}}
  const reset = async () => {
    await fresh(db, n)
    await loadHistory(db, n, 1, size)
  }
  try {
    const now = await databaseNow(db)
    const cutoff = new Date(now.getTime() - 2 * 86_400_000)
    const published = new Date(now.getTime() - 86_400_000)
    const since = new Date(now.getTime() - 30 * 86_400_000)
    // one op: the batched run in a child process, then the bulk transaction on a fresh copy
    const pair = async (op, options, bulk) => {
      await reset()
      await purgeWait(db) // the load's own purge, so that neither run pays for it
      const c = child(op, url, n, options)
      if (c.changed !== size) throw new Error(`${op} changed ${c.changed} of ${size}`)
      const batchedPurge = await purgeWait(db)
      await reset()
      await purgeWait(db)
      let changed = 0
      const ms = await time(async () => (changed = await bulk()))
      if (changed !== size) throw new Error(`bulk ${op} changed ${changed} of ${size}`)
      const bulkPurge = await purgeWait(db)
      if (batchedPurge !== null && bulkPurge !== null) {
        out[op].purgeMs.batched.push(batchedPurge)
        out[op].purgeMs.bulk.push(bulkPurge)
        out[op].ratioWithPurge.push((ms + bulkPurge) / (c.seconds * 1000 + batchedPurge))
      }
      out[op].batched.push(size / c.seconds)
      out[op].maxBatchMs.push(c.maxBatchMs)
      out[op].rssMb.push(c.maxRssMb)
      out[op].bulk.push(size / (ms / 1000))
      // judged per pair: the two halves of a pair ran a minute apart, while separate runs met a machine up to twice as slow
      out[op].ratio.push(ms / 1000 / c.seconds)
      out.bulkTxMs[op].push(ms)
      const purged = batchedPurge === null || bulkPurge === null ? '' : `, purge after ${fmt(batchedPurge / 1000, 1)} s vs ${fmt(bulkPurge / 1000, 1)} s`
      return `${op} ${fmt(size / c.seconds, 0)} vs bulk ${fmt(size / (ms / 1000), 0)} rows/s${purged}, rss ${fmt(c.maxRssMb)} MB`
    }
    for (let r = 0; r < runs; r++) {
      const a = await pair('archive', {before: cutoff.toISOString(), batch}, () =>
        bulkArchive(db, n, db.dialect.render.timeParam(cutoff), db.dialect.render.timeParam(published)),
      )
      const p = await pair('replay', {since: since.toISOString(), batch}, () => bulkReplay(db, n, db.dialect.render.timeParam(since)))
      log(`${db.dialect.name} ${size} batch ${batch} run ${r + 1}: ${a}; ${p}`)
    }
  } finally {
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(n, which))}`)
    await db.close()
  }
  for (const op of ['archive', 'replay']) {
    for (const k of Object.keys(out[op])) if (Array.isArray(out[op][k])) out[op][k] = summary(out[op][k])
    out[op].purgeMs = {batched: summary(out[op].purgeMs.batched), bulk: summary(out[op].purgeMs.bulk)}
  }
  out.bulkTxMs = {archive: summary(out.bulkTxMs.archive), replay: summary(out.bulkTxMs.replay)}
  return out
}

/** InnoDB's History list length: transactions whose undo logs are not purged yet. */
async function historyLength(db) {
  const [status] = await db.query(sql`SHOW ENGINE INNODB STATUS`)
  return Number(/History list length (\d+)/.exec(String(status?.Status ?? ''))?.[1] ?? NaN)
}

// ---- 2b. MariaDB control: does the purge running beside a batched run slow it down? ----
// The same batched run, once as usual and once with InnoDB's purge held off for its whole
// length by a read view left open on another connection (so its batches are purged only
// afterwards, as a bulk statement's are), interleaved. Equal speeds mean the purge of earlier
// batches is not what keeps a batched run under the bulk statement's speed.
export async function purgeHeldOff(url, size, rounds, log) {
  const db = await openDb(url)
  if (db.dialect.name !== 'mysql') return db.close().then(() => null)
  const {default: mysql} = await import('mysql2/promise')
  const n = names(`ph_${randomBytes(2).toString('hex')}`)
  const out = {rows: size, archive: {beside: [], heldOff: []}, replay: {beside: [], heldOff: []}}
  try {
    const now = await databaseNow(db)
    const options = {
      archive: {before: new Date(now.getTime() - 2 * 86_400_000).toISOString(), batch: 1000},
      replay: {since: new Date(now.getTime() - 30 * 86_400_000).toISOString(), batch: 1000},
    }
    for (let r = 0; r < rounds; r++) {
      for (const op of ['archive', 'replay']) {
        for (const held of r % 2 ? [true, false] : [false, true]) {
          await fresh(db, n)
          await loadHistory(db, n, 1, size)
          await purgeWait(db)
          const side = held ? await mysql.createConnection(url) : null
          let c
          try {
            await side?.query('START TRANSACTION WITH CONSISTENT SNAPSHOT')
            c = child(op, url, n, options[op])
            // each batch left its undo log unpurged, or the hold did not work
            if (held && (await historyLength(db)) < size / 1000 / 2) throw new Error('the open read view did not hold the purge off')
          } finally {
            await side?.end() // ends the read view: the purge catches up before the next load
          }
          if (c.changed !== size) throw new Error(`${op} changed ${c.changed} of ${size}`)
          out[op][held ? 'heldOff' : 'beside'].push(size / c.seconds)
        }
      }
      log(`mysql purge control ${size} round ${r + 1}: archive ${fmt(out.archive.beside.at(-1), 0)} rows/s with purge beside, ${fmt(out.archive.heldOff.at(-1), 0)} held off; replay ${fmt(out.replay.beside.at(-1), 0)} / ${fmt(out.replay.heldOff.at(-1), 0)}`)
    }
  } finally {
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(n, which))}`)
    await db.close()
  }
  for (const op of ['archive', 'replay']) out[op] = {beside: summary(out[op].beside), heldOff: summary(out[op].heldOff)}
  return out
}

// ---- 3. peak memory: what the rows cost against what V8's young generation costs ----
// V8 grows its young generation (up to 16 MB per semi-space) as a process keeps allocating,
// so a short run peaks lower than a long one whatever it holds. Each size is archived twice,
// with V8's default heap and with the semi-space capped at 1 MB (--max-semi-space-size=1):
// with the cap, what is left of the growth is what the run keeps.
const CAPPED = ['--max-semi-space-size=1']

export async function youngGeneration(url, sizes, log) {
  const db = await openDb(url)
  const n = names(`mem_${randomBytes(2).toString('hex')}`)
  const rows = []
  try {
    const now = await databaseNow(db)
    const before = new Date(now.getTime() - 2 * 86_400_000).toISOString()
    for (const size of sizes) {
      const run = async (flags, gcEvery) => {
        await fresh(db, n)
        await loadHistory(db, n, 1, size)
        const c = child('archive', url, n, {before, batch: 1000}, flags, gcEvery)
        if (c.changed !== size) throw new Error(`archive changed ${c.changed} of ${size}`)
        return c
      }
      // the live heap sampled every 10 batches (a full GC each, which costs time: its own run)
      const [plain, capped, collected] = [await run([]), await run(CAPPED), await run(['--expose-gc'], 10)]
      const liveMb = collected.liveHeapMb
      rows.push({dialect: db.dialect.name, rows: size, defaultMb: plain.maxRssMb, cappedMb: capped.maxRssMb, defaultS: plain.seconds, cappedS: capped.seconds, liveMb})
      log(`${db.dialect.name} archive ${size}: peak RSS ${fmt(plain.maxRssMb)} MB (${fmt(plain.seconds, 2)} s), young generation capped ${fmt(capped.maxRssMb)} MB (${fmt(capped.seconds, 2)} s), live heap ${fmt(liveMb.first, 2)} -> ${fmt(liveMb.last, 2)} MB`)
    }
  } finally {
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(n, which))}`)
    await db.close()
  }
  return rows
}

export async function sqliteUrl() {
  const {mkdtempSync} = await import('node:fs')
  const {tmpdir} = await import('node:os')
  return `sqlite:${mkdtempSync(`${tmpdir()}/outbox-bench-`)}/ops.db`
}

export default async function ({quick, log}) {
  const runs = quick ? 5 : 21 // status calls per size: a few ms each, so enough for a steady median
  const plan = quick
    ? [
        [PG, [10_000, 100_000]],
        [MYSQL, [10_000, 100_000]],
        [await sqliteUrl(), [10_000, 100_000]],
      ]
    : [
        [PG, [100_000, 1_000_000, 10_000_000]],
        [MYSQL, [100_000, 1_000_000, 10_000_000]],
        [await sqliteUrl(), [100_000, 1_000_000, 10_000_000]],
      ]
  const status = []
  for (const [url, sizes] of plan) status.push(...(await statusScaling(url, sizes, runs, log)))

  const tpPlan = quick
    ? [[PG, 20_000, 1, 1000]]
    : [
        [PG, 100_000, 1, 1000],
        [PG, 1_000_000, 3, 1000],
        // peak memory must stop growing with the rows moved: the 100k run ends before V8 has
        // grown its young generation to full size, so 3M against 1M is the flatness check
        [PG, 3_000_000, 1, 1000],
        [MYSQL, 100_000, 1, 1000],
        [MYSQL, 1_000_000, 3, 1000],
        [await sqliteUrl(), 100_000, 1, 1000],
        [await sqliteUrl(), 1_000_000, 3, 1000],
        // what a larger --batch buys, against the longest lock it holds
        [PG, 1_000_000, 1, 5000],
        [MYSQL, 1_000_000, 1, 5000],
        [await sqliteUrl(), 1_000_000, 1, 5000],
      ]
  const tp = []
  for (const [url, size, n, batch] of tpPlan) tp.push(await throughput(url, size, n, batch, log))
  const purgeControl = await purgeHeldOff(MYSQL, quick ? 20_000 : 1_000_000, quick ? 1 : 2, log)
  const memory = []
  for (const url of [PG, MYSQL, await sqliteUrl()]) memory.push(await youngGeneration(url, quick ? [10_000, 100_000] : [100_000, 1_000_000], log))
  return {title: 'Operations: status, replay, archive (ops)', markdown: markdown(status, tp, memory, purgeControl), raw: {status, throughput: tp, memory, purgeControl}}
}

function markdown(status, tp, memory, purgeControl) {
  const lines = [
    'Status reads the pending rows (PostgreSQL/SQLite: the partial index `(created_at, id) WHERE published_at IS NULL AND failed_at IS NULL`; MySQL: the prefix `(NULL, NULL)` of `(published_at, failed_at, created_at, id)`), the failed rows (partial `failed_at` index; MySQL: the prefix `(NULL, NOT NULL)`), and the window (partial `published_at` index; MySQL: a `published_at` range of the same index). Only history grows between rows of this table: same backlog (1000 pending, 50 failed, 1000 published in the window).',
    '',
    `"rows read" is what the status statements read from the table as the server counts them (PostgreSQL EXPLAIN ANALYZE, MariaDB ANALYZE; SQLite counts none, its plans go through the partial indexes, checked in test/ops/status-reads.test.ts): the backlog, 2051 rows, at every size. The times are a median of ${status[0]?.plain.runs} calls after the server has written the load out.`,
    '',
    '| dialect | rows | status median ms (min-max) | ratio to smallest | --by type median ms (min-max) | ratio | rows read |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ]
  for (const d of [...new Set(status.map((s) => s.dialect))]) {
    const rows = status.filter((s) => s.dialect === d)
    for (const s of rows) {
      lines.push(
        `| ${d} | ${s.rows.toLocaleString('en')} | ${fmt(s.plain.median)} (${fmt(s.plain.min)}-${fmt(s.plain.max)}) | ${fmt(s.plain.median / rows[0].plain.median, 2)}x | ${fmt(s.byType.median)} (${fmt(s.byType.min)}-${fmt(s.byType.max)}) | ${fmt(s.byType.median / rows[0].byType.median, 2)}x | ${s.rowsRead == null ? 'n/a' : s.rowsRead.toLocaleString('en')} |`,
      )
    }
  }
  lines.push(
    '',
    'Archive and replay: batched (`--batch 1000` unless stated, each batch one transaction, run as the library in a child process) against one bulk transaction doing the same work (`INSERT ... SELECT` + `DELETE`, or one `UPDATE`), same table, same run. Rows/s medians (min-max). A ratio is batched / bulk rows/s of one pair (the batched run, then the bulk on a fresh copy of the table), given as the median (min-max) over the pairs: the machine is shared, and its speed moved by up to 2x between pairs, less within one. "longest batch" is the longest gap between two batch commits, i.e. the longest any lock was held; the bulk transaction holds its locks for its whole duration. History rows are laid down as the producer writes them: ids time-ordered like its UUIDv7 and inserted oldest first (runs before 2026-12-03 had ids and insertion order reversed against created_at).',
    '',
    '| dialect | rows | batch | runs | archive rows/s | bulk rows/s | ratio | replay rows/s | bulk rows/s | ratio | longest batch ms (archive / replay) | bulk tx ms (archive / replay) | peak RSS MB (archive / replay) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  )
  const r = (s) => `${fmt(s.median, 0)} (${fmt(s.min, 0)}-${fmt(s.max, 0)})`
  const ratio = (s) => (s.runs > 1 ? `${fmt(s.median, 2)} (${fmt(s.min, 2)}-${fmt(s.max, 2)})` : fmt(s.median, 2))
  for (const t of tp) {
    lines.push(
      `| ${t.dialect} | ${t.rows.toLocaleString('en')} | ${t.batch} | ${t.archive.batched.runs} | ${r(t.archive.batched)} | ${r(t.archive.bulk)} | ${ratio(t.archive.ratio)} | ${r(t.replay.batched)} | ${r(t.replay.bulk)} | ${ratio(t.replay.ratio)} | ${fmt(t.archive.maxBatchMs.max, 0)} / ${fmt(t.replay.maxBatchMs.max, 0)} | ${fmt(t.bulkTxMs.archive.median, 0)} / ${fmt(t.bulkTxMs.replay.median, 0)} | ${fmt(t.archive.rssMb.max)} / ${fmt(t.replay.rssMb.max)} |`,
    )
  }
  const purged = tp.filter((t) => t.replay.ratioWithPurge.runs > 0)
  if (purged.length) {
    lines.push(
      '',
      "MariaDB purges after commit: InnoDB's background purge removes the old row versions and delete-marked records a statement left, after it commits. The bulk statement commits first and is purged afterwards; the purge of a batched run's earlier batches runs beside it, so it is nearly done when the run ends (the control below measures what that costs the run). Seconds until the History list length was back to 0 after each run, and the ratio with that time added to both sides (median (min-max) over the same pairs):",
      '',
      '| rows | batch | archive purge s (batched / bulk) | archive ratio with purge | replay purge s (batched / bulk) | replay ratio with purge |',
      '|---:|---:|---:|---:|---:|---:|',
      ...purged.map(
        (t) =>
          `| ${t.rows.toLocaleString('en')} | ${t.batch} | ${fmt(t.archive.purgeMs.batched.median / 1000)} / ${fmt(t.archive.purgeMs.bulk.median / 1000)} | ${ratio(t.archive.ratioWithPurge)} | ${fmt(t.replay.purgeMs.batched.median / 1000)} / ${fmt(t.replay.purgeMs.bulk.median / 1000)} | ${ratio(t.replay.ratioWithPurge)} |`,
      ),
    )
  }
  if (purgeControl) {
    const c = purgeControl
    const line = (op) => `${op}: ${fmt(c[op].beside.median, 0)} (${fmt(c[op].beside.min, 0)}-${fmt(c[op].beside.max, 0)}) rows/s with the purge beside it, ${fmt(c[op].heldOff.median, 0)} (${fmt(c[op].heldOff.min, 0)}-${fmt(c[op].heldOff.max, 0)}) with it held off, ${fmt(c[op].heldOff.median / c[op].beside.median, 2)}x`
    lines.push(
      '',
      `Control (MariaDB, ${c.rows.toLocaleString('en')} rows, --batch 1000, ${c.archive.beside.runs} runs each, interleaved): the same batched run with InnoDB's purge held off for its whole length by a read view left open on another connection, so that its batches are purged afterwards, as the bulk statement's are. ${line('archive')}; ${line('replay')}. Where the two are alike, the purge beside a batched run is not what keeps it under the bulk statement's speed: the batch's own statements are (the summary read and the change, which the bulk does in one pass).`,
    )
  }
  const mem = []
  for (const d of [...new Set(tp.map((t) => t.dialect))]) {
    const rows = tp.filter((t) => t.dialect === d && t.batch === 1000).sort((a, b) => a.rows - b.rows)
    for (let i = 1; i < rows.length; i++) {
      const [small, big] = [rows[i - 1], rows[i]]
      mem.push(`${d} ${big.rows.toLocaleString('en')} vs ${small.rows.toLocaleString('en')} rows: archive ${fmt(big.archive.rssMb.max / small.archive.rssMb.max, 2)}x, replay ${fmt(big.replay.rssMb.max / small.replay.rssMb.max, 2)}x`)
    }
  }
  if (mem.length) lines.push('', `Peak RSS of the batched run, each size against the next smaller: ${mem.join('; ')}.`)
  lines.push(
    '',
    `Peak RSS of a batched archive (--batch 1000, one run each) with V8's default heap and with its young generation capped (\`node --max-semi-space-size=1\`): V8 grows the young generation while a process keeps allocating, so a longer run peaks higher whatever it holds; with the cap, the growth left is what the run keeps.`,
    '',
    'The last columns are a third run with a full garbage collection every 10 batches (`node --expose-gc`): the heap still live after it, at the first sample (batch 10) and at the last. What a run keeps per batch shows there, apart from how V8 sizes its heap.',
    '',
    '| dialect | rows | peak RSS MB, default | seconds | peak RSS MB, young generation capped | seconds | live heap MB, batch 10 | live heap MB, last batch | live heap MB, max |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...memory.flat().map((m) => `| ${m.dialect} | ${m.rows.toLocaleString('en')} | ${fmt(m.defaultMb)} | ${fmt(m.defaultS, 2)} | ${fmt(m.cappedMb)} | ${fmt(m.cappedS, 2)} | ${fmt(m.liveMb?.first, 2)} | ${fmt(m.liveMb?.last, 2)} | ${fmt(m.liveMb?.max, 2)} |`),
    '',
    memory.map(([small, big]) => `${big.dialect} ${big.rows.toLocaleString('en')} against ${small.rows.toLocaleString('en')} rows: ${fmt(big.defaultMb / small.defaultMb, 2)}x with the default heap, ${fmt(big.cappedMb / small.cappedMb, 2)}x capped, live heap at the end ${fmt(big.liveMb?.last / small.liveMb?.last, 2)}x`).join('; ') + '.',
  )
  return lines.join('\n')
}
