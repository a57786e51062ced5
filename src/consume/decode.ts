// The message contract, consumer side: one decode per transport, each the inverse of what the
// publisher of that transport sends (src/publishers/*.ts), to one ConsumedEvent.
//
// | field            | AMQP (amqp.ts)            | NATS JetStream (nats.ts)   | Redis Streams (redis.ts)  |
// |------------------|---------------------------|----------------------------|---------------------------|
// | payload          | body (JSON, UTF-8)        | body (JSON, UTF-8)         | field `payload` (JSON)    |
// | id               | header outbox-event-id    | header outbox-event-id     | field `id`                |
// |                  | (and property message_id) | (and Nats-Msg-Id)          | (and outbox-event-id)     |
// | eventType        | header outbox-event-type  | header outbox-event-type   | field `type`              |
// |                  | (and property type,       | (and subject = prefix +    | (and outbox-event-type)   |
// |                  | routing key)              | event type)                |                           |
// | aggregateId      | header outbox-aggregate-id                    (all three)                           |
// | aggregateType    | header outbox-aggregate-type, absent when null (all three)                          |
// | aggregateVersion | header outbox-aggregate-version, decimal text, absent when null (all three)         |
// | createdAt        | header outbox-created-at, ISO 8601 with milliseconds (all three)                    |
// | headers          | every other header, under  | every other header except  | field `headers` (JSON     |
// |                  | its own name               | Nats-*                     | object), absent when none |
//
// HTTP carries CloudEvents 1.0 (./cloudevents.ts); stdout one envelope JSON object per line
// (decodeEnvelope here; schemas/envelope.schema.json). Header names starting with `outbox-`
// are the contract's own: event headers must not use them.
import {FieldReader, MessageDecodeError, parsePayload, type ConsumedEvent} from './event.js'

export const OUTBOX_HEADER = {
  id: 'outbox-event-id',
  eventType: 'outbox-event-type',
  aggregateType: 'outbox-aggregate-type',
  aggregateId: 'outbox-aggregate-id',
  aggregateVersion: 'outbox-aggregate-version',
  createdAt: 'outbox-created-at',
} as const

/** The part of an amqplib message decode reads (ConsumeMessage / GetMessage fit). */
export interface AmqpMessageLike {
  content: Uint8Array
  properties: {messageId?: string; headers?: Record<string, unknown>}
}

/** The part of a nats.js message decode reads (JsMsg / Msg / StoredMsg fit). */
export interface NatsMessageLike {
  data: Uint8Array
  headers?: {keys(): string[]; get(key: string): string}
}

// headers RabbitMQ adds on its own (quorum queue redeliveries, dead-lettering, shovels)
const AMQP_BROKER_HEADER = /^x-(delivery-count|death|first-death-|last-death-|received-from)/

function fromMetadata(where: string, headers: Map<string, string>, body: string): ConsumedEvent {
  const f = new FieldReader(where, (name) => headers.get(name))
  const event: ConsumedEvent = {
    id: f.required(OUTBOX_HEADER.id),
    eventType: f.required(OUTBOX_HEADER.eventType),
    aggregateType: f.optional(OUTBOX_HEADER.aggregateType),
    aggregateId: f.required(OUTBOX_HEADER.aggregateId),
    aggregateVersion: f.version(OUTBOX_HEADER.aggregateVersion),
    payload: undefined,
    headers: {},
    createdAt: f.time(OUTBOX_HEADER.createdAt),
  }
  event.payload = parsePayload(body, where)
  return event
}

/** Event headers: the ones the contract and the broker do not claim. */
function eventHeaders(entries: Iterable<[string, string]>, own: (lowerName: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of entries) if (!own(name.toLowerCase())) out[name] = value
  return out
}

const utf8 = new TextDecoder()
const isOutboxHeader = (lower: string) => lower.startsWith('outbox-')

/** A RabbitMQ message the amqp publisher sent. */
export function decodeAmqp(message: AmqpMessageLike): ConsumedEvent {
  const strings: [string, string][] = []
  for (const [name, value] of Object.entries(message.properties.headers ?? {})) {
    if (typeof value === 'string') strings.push([name, value])
    else if (Buffer.isBuffer(value)) strings.push([name, value.toString('utf8')])
  }
  const lookup = new Map(strings.map(([k, v]) => [k.toLowerCase(), v]))
  if (!lookup.has(OUTBOX_HEADER.id) && message.properties.messageId) lookup.set(OUTBOX_HEADER.id, message.properties.messageId)
  const own = (lower: string) => isOutboxHeader(lower) || AMQP_BROKER_HEADER.test(lower)
  const event = fromMetadata('amqp message', lookup, utf8.decode(message.content))
  event.headers = eventHeaders(strings, own)
  return event
}

/** A JetStream message the nats publisher sent. */
export function decodeNats(message: NatsMessageLike): ConsumedEvent {
  const strings: [string, string][] = (message.headers?.keys() ?? []).map((name) => [name, message.headers!.get(name)])
  const lookup = new Map(strings.map(([k, v]) => [k.toLowerCase(), v]))
  if (!lookup.has(OUTBOX_HEADER.id) && lookup.has('nats-msg-id')) lookup.set(OUTBOX_HEADER.id, lookup.get('nats-msg-id')!)
  const own = (lower: string) => isOutboxHeader(lower) || lower.startsWith('nats-')
  const event = fromMetadata('nats message', lookup, utf8.decode(message.data))
  event.headers = eventHeaders(strings, own)
  return event
}

/** A Redis stream entry's fields as the redis publisher wrote them (XADD). */
export function decodeRedis(fields: Record<string, string>): ConsumedEvent {
  const where = 'redis entry'
  const lookup = new Map(Object.entries(fields))
  for (const [outboxName, field] of [[OUTBOX_HEADER.id, 'id'], [OUTBOX_HEADER.eventType, 'type']] as const) {
    if (fields[field] !== undefined) lookup.set(outboxName, fields[field])
  }
  const payload = fields.payload
  if (payload === undefined) throw new MessageDecodeError(`${where}: no payload`)
  const event = fromMetadata(where, lookup, payload)
  event.headers = fields.headers === undefined ? {} : headersObject(parsePayload(fields.headers, `${where} headers`), where)
  return event
}

/** One envelope JSON object (a line of `outbox relay --publisher stdout`; schemas/envelope.schema.json). */
export function decodeEnvelope(envelope: string | Record<string, unknown>): ConsumedEvent {
  const where = 'envelope'
  const o = typeof envelope === 'string' ? parsePayload(envelope, where) : envelope
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw new MessageDecodeError(`${where}: not a JSON object`)
  const record = o as Record<string, unknown>
  const f = new FieldReader(where, (name) => (record[name] == null ? undefined : String(record[name])))
  if (!('payload' in record)) throw new MessageDecodeError(`${where}: no payload`)
  return {
    id: f.required('id'),
    eventType: f.required('event_type'),
    aggregateType: f.optional('aggregate_type'),
    aggregateId: f.required('aggregate_id'),
    aggregateVersion: f.version('aggregate_version'),
    payload: record.payload,
    headers: record.headers == null ? {} : headersObject(record.headers, where),
    createdAt: f.time('created_at'),
  }
}

function headersObject(value: unknown, where: string): Record<string, string> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new MessageDecodeError(`${where}: headers is not an object`)
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(value)) if (typeof v === 'string') out[k] = v
  return out
}
