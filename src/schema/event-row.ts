// An event row as the database hands it back, to the event the code works with: the one place
// rows are mapped (a claim's rows for publishers; whole rows for failed, archive export).
import type {Dialect} from '../../dialects/index.js'

/** The identity columns of an event row, read the same way wherever rows come back. */
export interface EventIdentity {
  id: string
  eventType: string
  aggregateType: string | null
  aggregateId: string
  aggregateVersion: number | null
}

export function eventIdentity(row: Record<string, unknown>): EventIdentity {
  return {
    id: String(row.id),
    eventType: String(row.event_type),
    aggregateType: optionalText(row.aggregate_type),
    aggregateId: String(row.aggregate_id),
    aggregateVersion: optionalNumber(row.aggregate_version),
  }
}

const asText = (value: unknown): string => (typeof value === 'string' ? value : String(value))
const optionalText = (value: unknown): string | null => (value == null ? null : asText(value))
const optionalNumber = (value: unknown): number | null => (value == null ? null : Number(value))

/** An event as a relay claimed it: what publishers receive. */
export interface ClaimedEvent extends EventIdentity {
  /** the payload's JSON text, as stored: publishers forward it without re-serialising */
  payload: string
  headers: string | null
  createdAt: Date
  /** attempts including this one */
  attempts: number
}

/** A claim's row (src/schema/columns.ts CLAIMED_COLUMNS) to the event publishers get. */
export function toClaimedEvent(dialect: Dialect, row: Record<string, unknown>): ClaimedEvent {
  // every field written out, no `...eventIdentity(row)`: on Node 20 a spread followed by more
  // properties cost ~10 µs an event (a slow-path object), a tenth of SQLite's whole claim; text
  // that is text already is not passed through String() (a builtin call each)
  return {
    id: asText(row.id),
    eventType: asText(row.event_type),
    aggregateType: optionalText(row.aggregate_type),
    aggregateId: asText(row.aggregate_id),
    aggregateVersion: optionalNumber(row.aggregate_version),
    payload: typeof row.payload === 'string' ? row.payload : JSON.stringify(row.payload),
    headers: row.headers == null ? null : typeof row.headers === 'string' ? row.headers : JSON.stringify(row.headers),
    createdAt: dialect.render.parseTime(row.created_at) as Date,
    attempts: Number(row.attempts),
  }
}

/** A whole event row, as `outbox failed` shows it and archive exports it. */
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
