// The partitions suite's second part (issue 25): `partitions --ensure 14d` on a partitioned
// outbox whose catch-all partition (PostgreSQL DEFAULT, MySQL MAXVALUE) holds `rows` rows,
// against the same ensure with an empty catch-all. Per round, on a fresh table made by init
// --partition-by day (ranges to a week ahead), ensure adds the 7 missing daily ranges, the
// catch-all holding:
//   empty:   nothing (the baseline);
//   inside:  rows dated inside the ranges being added, which ensure moves into them (the
//            default-partition recovery, pgmq#583);
//   beyond:  rows dated past the new ranges, which stay in the catch-all;
// then a second ensure finds nothing missing (what cron runs on most days). Meanwhile a
// producer inserts an event into today's partition every 20 ms on its own connection: its
// slowest insert is how long the ensure held writers up.
import {randomUUID} from 'node:crypto'
import {applyInit, ensurePartitions, join, openDb, raw, sql} from './lib-under-test.js'

const DAY = 86_400_000
export const ENSURE_CASES = ['empty', 'inside', 'beyond']
const names = (tag) => ({outbox: `bench_pens_${tag}`, inbox: `bench_pens_${tag}_in`, archive: `bench_pens_${tag}_ar`})
const tableOf = (db, tag) => db.dialect.render.table(names(tag), 'outbox')

export async function dropEnsureTables(db) {
  for (const tag of ['t', 'inside', 'beyond']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(tableOf(db, tag))}`)
}

/** `rows` rows over 3 days from `from`, in an unpartitioned staging table; copied in per round. */
async function stage(db, tag, rows, from) {
  await applyInit(db, names(tag), {inbox: false, archive: false})
  for (let first = 0; first < rows; first += 1000) {
    const values = []
    for (let i = first; i < Math.min(rows, first + 1000); i++) {
      const created = db.dialect.render.timeParam(new Date(from + Math.floor((i * 3 * DAY) / rows)))
      values.push(sql`(${randomUUID()}, 'bench.catchall', ${`agg-${i}`}, '{}', ${created})`)
    }
    await db.execute(sql`INSERT INTO ${raw(tableOf(db, tag))} (id, event_type, aggregate_id, payload, created_at) VALUES ${join(values)}`)
  }
}

/** Stages both row sets from the database clock: init's last range ends 8 days after today's start. */
export async function stageEnsure(db, rows) {
  await dropEnsureTables(db)
  const [{now}] = await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`)
  const today = Math.floor(db.dialect.render.parseTime(now).getTime() / DAY) * DAY
  await stage(db, 'inside', rows, today + 8 * DAY)
  await stage(db, 'beyond', rows, today + 30 * DAY)
}

/** A producer's inserts every 20 ms on its own connection until stop(); stop() resolves to the slowest, ms. */
function producer(url, table) {
  let running = true
  const done = (async () => {
    const db = await openDb(url, {poolSize: 1})
    let worst = 0
    try {
      while (running) {
        const started = performance.now()
        await db.execute(sql`INSERT INTO ${raw(table)} (id, event_type, aggregate_id, payload, created_at) VALUES (${randomUUID()}, 'bench.producer', 'p', '{}', ${raw(db.dialect.render.now)})`)
        worst = Math.max(worst, performance.now() - started)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } finally {
      await db.close()
    }
    return worst
  })()
  return {stop: () => ((running = false), done)}
}

/** One case on a fresh table: {ms, moved, added, producerMs, againMs}. */
export async function ensureRound(db, url, kind) {
  const target = names('t')
  const t = tableOf(db, 't')
  await db.execute(sql`DROP TABLE IF EXISTS ${raw(t)}`)
  await applyInit(db, target, {inbox: false, archive: false, partitionBy: 'day'})
  if (kind !== 'empty') await db.execute(sql`INSERT INTO ${raw(t)} SELECT * FROM ${raw(tableOf(db, kind))}`)
  await db.execute(db.dialect.verify.analyze(target))
  const writes = producer(url, t)
  await new Promise((resolve) => setTimeout(resolve, 200)) // the producer is connected and inserting
  const started = performance.now()
  const result = await ensurePartitions(db, target, {aheadMs: 14 * DAY})
  const ms = performance.now() - started
  const producerMs = await writes.stop()
  const again = performance.now()
  const second = await ensurePartitions(db, target, {aheadMs: 14 * DAY})
  const againMs = performance.now() - again
  if (second.added.length !== 0) throw new Error(`${t}: the second ensure added ${second.added.length} ranges`)
  return {ms, moved: result.movedRows, added: result.added.length, producerMs, againMs}
}
