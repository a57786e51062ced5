// The horizon suite on MariaDB: the claim's locking read after N events published while one
// session holds a consistent snapshot (an open read view: purge keeps every delete-marked
// entry of the claim index), today and from a low-water mark. InnoDB's own count of the pages
// the statement touched (ANALYZE FORMAT=JSON, r_engine_stats.pages_accessed) is the
// load-independent figure, as buffers are on PostgreSQL.
import {onInterrupt} from './interrupt.js'
import {dropTables, freshTables} from './outbox.js'
import {DIALECTS, driver, MYSQL_READ_COMMITTED} from './lib-under-test.js'
import {median} from './lib.js'

const mysql = await driver('mysql2/promise')
const my = DIALECTS.mysql

export async function connect(url) {
  const u = new URL(url)
  return mysql.createConnection({host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database: u.pathname.slice(1)})
}

export const rows = async (c, text, values = []) => (await c.query(text, values))[0]

/** The claim's pick as the relay runs it (its locking read), optionally from a mark. */
export function pick(names, mark) {
  const from = mark ? `e.created_at >= '${mark}' AND ` : ''
  return `SELECT e.id FROM ${names.outbox} e FORCE INDEX (${names.outbox}_claim_idx)
WHERE ${from}e.published_at IS NULL AND e.failed_at IS NULL AND (e.lease_until IS NULL OR e.lease_until < UTC_TIMESTAMP(6))
ORDER BY e.created_at, e.id LIMIT 100 FOR UPDATE SKIP LOCKED`
}

/** Pages accessed and ms of the pick, in a READ COMMITTED transaction rolled back; median of `repeats`. */
export async function analyze(c, text, repeats) {
  const runs = []
  for (let i = 0; i < repeats; i++) {
    await c.query('START TRANSACTION')
    const [[row]] = await c.query(`ANALYZE FORMAT=JSON ${text}`)
    await c.query('ROLLBACK')
    const plan = JSON.parse(Object.values(row)[0])
    const table = plan.query_block.nested_loop?.[0]?.table ?? plan.query_block.table
    runs.push({pages: table?.r_engine_stats?.pages_accessed ?? NaN, ms: plan.query_block.r_total_time_ms})
  }
  return {pages: median(runs.map((r) => r.pages)), ms: median(runs.map((r) => r.ms))}
}

/** Publishes n events, `chunk` at a time: inserted, leased, marked with the dialect's own mark. */
export async function publish(c, names, n, chunk) {
  for (let done = 0; done < n; done += chunk) {
    await c.query(`INSERT INTO ${names.outbox} (id, event_type, aggregate_id, payload, created_at)
SELECT UUID(), 'order.created', CONCAT('order-', seq), '{}', UTC_TIMESTAMP(6) FROM seq_1_to_${Math.min(chunk, n - done)}`)
    const ids = (await rows(c, `SELECT id FROM ${names.outbox} FORCE INDEX (${names.outbox}_claim_idx) WHERE published_at IS NULL AND failed_at IS NULL`)).map((r) => r.id)
    await c.query(`UPDATE ${names.outbox} SET lease_owner = 'bench-horizon', lease_until = DATE_ADD(UTC_TIMESTAMP(6), INTERVAL 30 SECOND), attempts = attempts + 1 WHERE id IN (?)`, [ids])
    const mark = my.render.compile(my.relay.markPublished(names, ids))
    await c.query(mark.text, mark.params)
  }
}

export const historyLength = async (c) => Number((await rows(c, `SELECT COUNT AS n FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'`))[0].n)

/**
 * The pick once purge has caught up: measured every second (up to 60 s) until it reads no more
 * than `floor` pages. The history list counts undo logs (transactions), not rows, and is
 * server-wide, so it cannot tell when this table's entries are gone.
 */
async function afterPurge(c, text, repeats, floor) {
  const started = Date.now()
  let m
  do {
    m = await analyze(c, text, repeats)
    if (m.pages <= floor) break
    await new Promise((r) => setTimeout(r, 1000))
  } while (Date.now() - started < 60_000)
  return {...m, waitedS: (Date.now() - started) / 1000}
}

/** One N: held read view, N published, `head` pending; the pick today and from the mark; then purged. */
export async function mariadbSize(db, url, n, {chunk, head, repeats}) {
  const names = await freshTables(db, 'hzm')
  const c = await connect(url)
  const hold = await connect(url)
  // the held read view's connection first: its metadata lock would keep the DROP waiting
  const cleanUp = async () => (await hold.end().catch(() => {}), await c.end().catch(() => {}), await dropTables(db, names))
  const unregister = onInterrupt(cleanUp)
  try {
    await c.query(MYSQL_READ_COMMITTED)
    await hold.query('START TRANSACTION WITH CONSISTENT SNAPSHOT')
    await hold.query(`SELECT COUNT(*) FROM ${names.outbox}`)
    await publish(c, names, n, chunk)
    await c.query(`INSERT INTO ${names.outbox} (id, event_type, aggregate_id, payload, created_at)
SELECT UUID(), 'order.created', CONCAT('head-', seq), '{}', UTC_TIMESTAMP(6) FROM seq_1_to_${head}`)
    const mark = (await rows(c, `SELECT DATE_FORMAT(MIN(created_at), '%Y-%m-%d %H:%i:%s.%f') AS m FROM ${names.outbox} FORCE INDEX (${names.outbox}_claim_idx) WHERE published_at IS NULL AND failed_at IS NULL`))[0].m
    const held = {today: await analyze(c, pick(names), repeats), fromMark: await analyze(c, pick(names, mark), repeats), history: await historyLength(c)}
    await hold.query('ROLLBACK')
    // the floor: what the pick from the mark reads, the batch and its neighbours
    const today = await afterPurge(c, pick(names), repeats, held.fromMark.pages * 2)
    return {n, held, released: {today, history: await historyLength(c)}}
  } finally {
    unregister()
    await cleanUp()
  }
}
