// outbox status / replay / archive at scale.
// 1. status time on tables of growing size with the same small backlog (only history grows):
//    status must read the pending rows, the failed rows and the window, never the history.
// 2. archive and replay throughput (batched, each batch one transaction) against one bulk
//    transaction doing the same work in the same run; the longest batch; peak RSS at 100k vs 1M.
import {execFileSync} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {databaseNow, dialectOf, openDb, raw, readStatus, sql, statusRowsRead} from '../lib-under-test.js'
import {fmt, summary} from '../lib.js'
import {opsMarkdown} from '../ops-report.js'
import {fresh, loadBacklog, loadHistory, names} from '../ops-tables.js'
import {sqliteUrl} from '../servers.js'

const PG = process.env.OUTBOX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const MYSQL = process.env.OUTBOX_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const root = new URL('../..', import.meta.url).pathname

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
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(n, which))}`)
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
  const o = raw(dialectOf(db).render.table(n, 'outbox'))
  const a = raw(dialectOf(db).render.table(n, 'archive'))
  const where = sql`created_at < ${beforeParam} AND published_at IS NOT NULL AND failed_at IS NULL AND published_at < ${publishedParam}`
  return db.transaction(async (tx) => {
    await tx.execute(sql`INSERT INTO ${a} (${raw(COLS)}, archived_at) SELECT ${raw(COLS)}, ${raw(dialectOf(db).render.now)} FROM ${o} WHERE ${where}`)
    return tx.execute(sql`DELETE FROM ${o} WHERE ${where}`)
  })
}

function bulkReplay(db, n, sinceParam) {
  const o = raw(dialectOf(db).render.table(n, 'outbox'))
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
        bulkArchive(db, n, dialectOf(db).render.timeParam(cutoff), dialectOf(db).render.timeParam(published)),
      )
      const p = await pair('replay', {since: since.toISOString(), batch}, () => bulkReplay(db, n, dialectOf(db).render.timeParam(since)))
      log(`${db.dialect.name} ${size} batch ${batch} run ${r + 1}: ${a}; ${p}`)
    }
  } finally {
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(n, which))}`)
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
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(n, which))}`)
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
    for (const which of ['outbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(n, which))}`)
    await db.close()
  }
  return rows
}

// OUTBOX_BENCH_OPS_ROWS: the full run's sizes scaled so that its 1M becomes this many rows
// (100k -> a tenth of it, 10M -> ten times it), pairs and batches unchanged: the same plan, short
// enough for a round of `npm run bench -- compare ops`.
const FULL_ROWS = 1_000_000

/** The run's scale against the full plan (1 = full size), from OUTBOX_BENCH_OPS_ROWS. */
export function opsScale(quick, env = process.env) {
  const setting = env.OUTBOX_BENCH_OPS_ROWS
  if (setting === undefined || setting === '') return 1
  const rows = Number(setting)
  if (!Number.isInteger(rows) || rows < 10_000 || rows % 10 !== 0) throw new Error(`OUTBOX_BENCH_OPS_ROWS must be a whole number of rows, at least 10000 and a multiple of 10 (got ${setting})`)
  if (quick) throw new Error('OUTBOX_BENCH_OPS_ROWS sizes the full run; --quick has sizes of its own: drop one of them')
  return rows / FULL_ROWS
}

export default async function ({quick, log}) {
  const scale = opsScale(quick)
  const size = (rows) => Math.round(rows * scale)
  const runs = quick ? 5 : 21 // status calls per size: a few ms each, so enough for a steady median
  const statusSizes = quick ? [10_000, 100_000] : [100_000, 1_000_000, 10_000_000].map(size)
  const plan = [
    [PG, statusSizes],
    [MYSQL, statusSizes],
    [sqliteUrl(), statusSizes],
  ]
  const status = []
  for (const [url, sizes] of plan) status.push(...(await statusScaling(url, sizes, runs, log)))

  const tpPlan = quick
    ? [[PG, 20_000, 1, 1000]]
    : [
        [PG, size(100_000), 1, 1000],
        [PG, size(1_000_000), 3, 1000],
        // peak memory must stop growing with the rows moved: the 100k run ends before V8 has
        // grown its young generation to full size, so 3M against 1M is the flatness check
        [PG, size(3_000_000), 1, 1000],
        [MYSQL, size(100_000), 1, 1000],
        [MYSQL, size(1_000_000), 3, 1000],
        [sqliteUrl(), size(100_000), 1, 1000],
        [sqliteUrl(), size(1_000_000), 3, 1000],
        // what a larger --batch buys, against the longest lock it holds
        [PG, size(1_000_000), 1, 5000],
        [MYSQL, size(1_000_000), 1, 5000],
        [sqliteUrl(), size(1_000_000), 1, 5000],
      ]
  const tp = []
  for (const [url, rows, n, batch] of tpPlan) tp.push(await throughput(url, rows, n, batch, log))
  const purgeControl = await purgeHeldOff(MYSQL, quick ? 20_000 : size(1_000_000), quick ? 1 : 2, log)
  const memory = []
  for (const url of [PG, MYSQL, sqliteUrl()]) memory.push(await youngGeneration(url, quick ? [10_000, 100_000] : [100_000, 1_000_000].map(size), log))
  const sized = scale === 1 ? '' : `**Sized run** (\`OUTBOX_BENCH_OPS_ROWS=${size(FULL_ROWS)}\`): every size is the full run's times ${scale}, so ${size(FULL_ROWS).toLocaleString('en')} rows stand where the full run has 1,000,000; pairs and batches as in the full run.\n\n`
  return {
    title: 'Operations: status, replay, archive (ops)',
    markdown: sized + opsMarkdown(status, tp, memory, purgeControl),
    raw: {scale, rowsForFull1M: size(FULL_ROWS), status, throughput: tp, memory, purgeControl},
  }
}

/** The figures `npm run bench -- compare` puts side by side: batched / bulk rows/s per dialect, size, batch and command. */
export function headline(raw) {
  return raw.throughput.flatMap((t) =>
    ['archive', 'replay'].map((op) => ({
      key: `${t.dialect} ${op} ${t.rows} rows batch ${t.batch}`,
      label: `${t.dialect} ${op}, ${t.rows.toLocaleString('en')} rows, --batch ${t.batch}: batched / bulk (${t[op].ratio.runs} pair${t[op].ratio.runs > 1 ? 's' : ''}, median)`,
      value: t[op].ratio.median,
      better: 'higher',
    })),
  )
}
