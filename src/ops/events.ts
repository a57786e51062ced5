// Reading whole events back (failed list, failed show, archive export): one row shape for all.
import type {Dialect} from '../../dialects/index.js'
import {eventIdentity, type EventIdentity} from '../schema/event-row.js'

export const ALL_COLUMNS = [
  'id',
  'event_type',
  'aggregate_type',
  'aggregate_id',
  'aggregate_version',
  'payload',
  'headers',
  'created_at',
  'published_at',
  'attempts',
  'lease_owner',
  'lease_until',
  'last_error',
  'failed_at',
] as const

/** As `outbox status` counts them: in-flight (lease live), expired-lease (its relay died or stalled), retrying (no lease, attempted before). */
export type EventState = 'pending' | 'in-flight' | 'expired-lease' | 'retrying' | 'failed' | 'published' | 'archived'

export interface StoredEvent extends EventIdentity {
  payload: unknown
  headers: unknown
  createdAt: string
  publishedAt: string | null
  attempts: number
  leaseOwner: string | null
  leaseUntil: string | null
  lastError: string | null
  failedAt: string | null
}

/** A driver row to the event, times as ISO-8601 and JSON parsed whatever the driver returned. */
export function toStoredEvent(dialect: Dialect, row: Record<string, unknown>): StoredEvent {
  const time = (v: unknown) => dialect.render.parseTime(v)?.toISOString() ?? null
  return {
    ...eventIdentity(row),
    payload: json(row.payload),
    headers: json(row.headers),
    createdAt: time(row.created_at) as string,
    publishedAt: time(row.published_at),
    attempts: Number(row.attempts ?? 0),
    leaseOwner: row.lease_owner == null ? null : String(row.lease_owner),
    leaseUntil: time(row.lease_until),
    lastError: row.last_error == null ? null : String(row.last_error),
    failedAt: time(row.failed_at),
  }
}

/** pg parses jsonb, MariaDB's JSON is text, SQLite's is text */
function json(value: unknown): unknown {
  if (value == null) return null
  if (typeof value !== 'string') return Buffer.isBuffer(value) ? JSON.parse(value.toString('utf8')) : value
  try {
    return JSON.parse(value)
  } catch {
    return value
  }
}

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
