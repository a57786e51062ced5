// The identity columns of an event row, read the same way wherever rows come back.
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
    aggregateType: row.aggregate_type == null ? null : String(row.aggregate_type),
    aggregateId: String(row.aggregate_id),
    aggregateVersion: row.aggregate_version == null ? null : Number(row.aggregate_version),
  }
}

/** An event as a relay claimed it: what publishers receive. */
export interface ClaimedEvent extends EventIdentity {
  /** the payload's JSON text, as stored: publishers forward it without re-serialising */
  payload: string
  headers: string | null
  createdAt: Date
  /** attempts including this one */
  attempts: number
}
