// What is left in the outbox, read with `outbox status`'s own queries (src/ops/status.ts),
// so the relay's metrics and --once exit code mean what `outbox status` shows.
import {sql, type SqlBool} from 'kysely'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {num, opsContext} from '../ops/query.js'
import {run} from '../ops/statements.js'
import {pendingPredicate, readStatus, type StatusReport} from '../ops/status.js'

export interface Backlog {
  /** unpublished and not failed: waiting, leased, or retrying with backoff */
  pending: number
  /** pending and waiting out a retry backoff */
  retrying: number
  /** pending and leased by a live relay right now */
  inFlight: number
  failed: number
  /** age of the oldest pending event by the database clock; null when there is none */
  oldestPendingAgeSeconds: number | null
}

/** The status report over the last minute (metrics also render its latency quantiles). */
export function relayStatus(db: Db, names: TableNames): Promise<StatusReport> {
  return readStatus(db, names, {windowMs: 60_000})
}

export async function relayBacklog(db: Db, names: TableNames): Promise<Backlog> {
  const s = await relayStatus(db, names)
  return {pending: s.pending, retrying: s.retrying, inFlight: s.inFlight, failed: s.failed, oldestPendingAgeSeconds: s.oldestPendingAgeSeconds}
}

/** What a `relay --once` run leaves behind that it should have delivered. */
export interface Undelivered {
  /** pending events no live lease holds, written before the run started or attempted already */
  total: number
  /** of them, waiting out a retry backoff or an outage's pause (not claimable yet) */
  waiting: number
}

/**
 * Pending events a `relay --once` run should have delivered and did not: those no live lease
 * holds (a lease another relay holds is theirs to report) that were written before `startedAt`
 * (database clock), or were attempted (lease_until set: a backoff, an outage's pause, a lease
 * that lapsed). An event written during the run and never touched is the next run's.
 */
export async function undelivered(db: Db, names: TableNames, startedAt: Date): Promise<Undelivered> {
  const {k} = await opsContext(db, names)
  const now = sql.raw(db.dialect.render.now)
  const started = db.dialect.render.timeParam(startedAt)
  const [row] = await run(
    db,
    k
      .selectFrom(names.outbox)
      .select([sql<number>`COUNT(*)`.as('total'), sql<number>`SUM(CASE WHEN lease_until > ${now} THEN 1 ELSE 0 END)`.as('waiting')])
      .where(pendingPredicate())
      .where(sql<SqlBool>`(lease_owner IS NULL OR lease_until <= ${now})`)
      .where(sql<SqlBool>`(created_at < ${started} OR lease_until IS NOT NULL)`),
  )
  return {total: num(row?.total), waiting: num(row?.waiting)}
}
