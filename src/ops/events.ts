// Reading whole events back (failed list, failed show, archive export): one row shape for all.
import type {Dialect} from '../../dialects/index.js'
import type {StoredEvent} from '../schema/event-row.js'

export {EVENT_COLUMN_NAMES as ALL_COLUMNS} from '../schema/columns.js'

/** As `outbox status` counts them: in-flight (lease live), expired-lease (its relay died or stalled), retrying (no lease, attempted before). */
export type EventState = 'pending' | 'in-flight' | 'expired-lease' | 'retrying' | 'failed' | 'published' | 'archived'

export {toStoredEvent, type StoredEvent} from '../schema/event-row.js'

/**
 * A time as Dialect.exactTime wrote it (UTC: PostgreSQL's ISO text, MySQL's
 * 'YYYY-MM-DD HH:MM:SS.ffffff', SQLite's stored ISO text) as ISO-8601 with Z, every digit kept.
 */
export function exactIso(text: unknown): string | null {
  if (text == null) return null
  const value = String(text).trim().replace(' ', 'T')
  return value.endsWith('Z') ? value : `${value}Z`
}

export function stateOf(e: StoredEvent, now: Date): EventState {
  if (e.publishedAt) return 'published'
  if (e.failedAt) return 'failed'
  if (e.leaseOwner && e.leaseUntil) return new Date(e.leaseUntil) > now ? 'in-flight' : 'expired-lease'
  if (!e.leaseOwner && e.attempts > 0) return 'retrying'
  return 'pending'
}

export interface SampleEvent {
  id: string
  eventType: string
  createdAt: string
}

/** the few fields a dry run or a result lists per sampled row */
export function sampleOf(dialect: Dialect, row: Record<string, unknown>): SampleEvent {
  // a batch's rows carry cursor_at (created_at at full precision, as text) and created_at only
  // where they need it: a Date per row was a quarter of a MariaDB batch's allocations
  const createdAt = row.created_at ?? row.cursor_at
  return {id: String(row.id), eventType: String(row.event_type), createdAt: dialect.render.parseTime(createdAt)?.toISOString() ?? ''}
}
