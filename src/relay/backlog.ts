// What is left in the outbox, read with `outbox status`'s own queries (src/ops/status.ts),
// so the relay's metrics and --once exit code mean what `outbox status` shows.
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {readStatus, type StatusReport} from '../ops/status.js'

export interface Backlog {
  /** unpublished and not failed: waiting, leased, or retrying with backoff */
  pending: number
  /** pending and waiting out a retry backoff */
  retrying: number
  /** pending and leased by a live relay right now */
  inFlight: number
  failed: number
  /** age of the oldest pending event by the database clock; null when there is none */
  oldestPendingSeconds: number | null
}

/** The status report over the last minute (metrics also render its latency quantiles). */
export function relayStatus(db: Db, names: TableNames): Promise<StatusReport> {
  return readStatus(db, names, {windowMs: 60_000})
}

export async function relayBacklog(db: Db, names: TableNames): Promise<Backlog> {
  const s = await relayStatus(db, names)
  return {pending: s.pending, retrying: s.retrying, inFlight: s.inFlight, failed: s.failed, oldestPendingSeconds: s.oldestPendingAgeSeconds}
}
