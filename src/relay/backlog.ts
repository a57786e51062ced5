// The outbox's backlog by the database clock: for metrics and `relay --once`'s exit code.
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'

export interface Backlog {
  /** unpublished and not failed: waiting, leased, or retrying with backoff */
  pending: number
  failed: number
  /** age of the oldest pending event; null when there is none */
  oldestPendingSeconds: number | null
}

export async function relayBacklog(db: Db, names: TableNames): Promise<Backlog> {
  const [row] = await db.query<{pending: unknown; failed: unknown; oldest_pending_seconds: unknown}>(db.dialect.relayBacklog(names))
  const oldest = row?.oldest_pending_seconds
  return {
    pending: Number(row?.pending ?? 0),
    failed: Number(row?.failed ?? 0),
    oldestPendingSeconds: oldest == null ? null : Math.max(0, Number(oldest)),
  }
}
