// The partitions and retention suites' pairs: the relay's drain of a pending backlog (claim +
// mark, no-op publisher, batch 100) and `status` (readStatus, median of three), on an
// unpartitioned outbox and a partitioned one holding the same rows, alternating which goes first.
import {fmt, median, summary} from './lib.js'
import {raw, readStatus, Relay, sql} from './lib-under-test.js'

export const BATCH = 100
export const BACKLOG = 2000
const noop = {name: 'noop', publish: async (events) => events.map(() => ({ok: true})), close: async () => {}}

/** the backlog back to pending: its rows are 'bench.pending' (and created at or after `since`, which an index finds on a big table) */
async function resetBacklog(db, names, since) {
  const after = since ? sql` AND created_at >= ${db.dialect.render.timeParam(since)}` : sql``
  await db.execute(sql`UPDATE ${raw(db.dialect.render.table(names, 'outbox'))} SET published_at = NULL, lease_owner = NULL, lease_until = NULL, attempts = 0
WHERE event_type = 'bench.pending'${after}`)
}

async function drainMs(db, names, since) {
  await resetBacklog(db, names, since)
  await new Promise((resolve) => setTimeout(resolve, 250)) // the reset's background work settles
  const started = performance.now()
  const result = await new Relay({db, publisher: noop, tables: names, batch: BATCH, owner: 'bench-part'}).drainOnce()
  const ms = performance.now() - started
  if (result.published !== BACKLOG) throw new Error(`${names.outbox}: drained ${result.published} of ${BACKLOG}`)
  return ms
}

async function statusMs(db, names) {
  const started = performance.now()
  await readStatus(db, names, {windowMs: 3_600_000})
  return performance.now() - started
}

/** `count` pairs; per figure the times of each table and the partitioned / unpartitioned ratio per pair, summarised */
export async function drainAndStatusPairs(db, {plain, parted, count, since, log, label}) {
  const t = {drain: {plain: [], parted: []}, status: {plain: [], parted: []}}
  const ratios = {drain: [], status: []}
  for (let i = 0; i < count; i++) {
    const order = i % 2 ? ['parted', 'plain'] : ['plain', 'parted']
    const pair = {drain: {}, status: {}}
    for (const which of order) {
      const names = which === 'plain' ? plain : parted
      pair.drain[which] = await drainMs(db, names, since)
      pair.status[which] = median([await statusMs(db, names), await statusMs(db, names), await statusMs(db, names)])
    }
    for (const k of ['drain', 'status']) {
      t[k].plain.push(pair[k].plain)
      t[k].parted.push(pair[k].parted)
      ratios[k].push(pair[k].parted / pair[k].plain)
    }
    log(`${label} pair ${i + 1}: drain ${fmt(pair.drain.plain, 0)} / ${fmt(pair.drain.parted, 0)} ms, status ${fmt(pair.status.plain)} / ${fmt(pair.status.parted)} ms (unpartitioned / partitioned)`)
  }
  const figures = {
    drain: {plain: summary(t.drain.plain), parted: summary(t.drain.parted), ratio: summary(ratios.drain)},
    status: {plain: summary(t.status.plain), parted: summary(t.status.parted), ratio: summary(ratios.status)},
  }
  return {figures, times: t, ratios}
}
