// The event as a JSON object, built as text so the stored payload is spliced in as-is
// (no parse and re-stringify): shared by the stdout, amqp, nats and redis publishers.
import type {ClaimedEvent} from '../schema/event-row.js'

/** Header names and values from the event's headers column (e.g. traceparent). */
export function eventHeaders(event: ClaimedEvent): Record<string, string> {
  if (!event.headers) return {}
  try {
    const parsed = JSON.parse(event.headers) as unknown
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {}
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') out[k] = v
    return out
  } catch {
    return {}
  }
}

/** {"id", "event_type", "aggregate_type", "aggregate_id", "aggregate_version", "created_at", "attempts", "headers", "payload"} */
export function envelopeJson(event: ClaimedEvent): string {
  return (
    `{"id":${JSON.stringify(event.id)},"event_type":${JSON.stringify(event.eventType)}` +
    `,"aggregate_type":${JSON.stringify(event.aggregateType)},"aggregate_id":${JSON.stringify(event.aggregateId)}` +
    `,"aggregate_version":${event.aggregateVersion === null ? 'null' : String(event.aggregateVersion)}` +
    `,"created_at":${JSON.stringify(event.createdAt.toISOString())},"attempts":${event.attempts}` +
    `,"headers":${event.headers ?? 'null'},"payload":${event.payload}}`
  )
}

/** Flat string metadata for brokers with message headers (AMQP headers, NATS headers, Redis fields). */
export function metadata(event: ClaimedEvent): Record<string, string> {
  const out: Record<string, string> = {
    'outbox-event-id': event.id,
    'outbox-event-type': event.eventType,
    'outbox-aggregate-id': event.aggregateId,
    'outbox-created-at': event.createdAt.toISOString(),
  }
  if (event.aggregateType !== null) out['outbox-aggregate-type'] = event.aggregateType
  if (event.aggregateVersion !== null) out['outbox-aggregate-version'] = String(event.aggregateVersion)
  return {...out, ...eventHeaders(event)}
}
