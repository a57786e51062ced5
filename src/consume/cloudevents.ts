// The HTTP publisher's CloudEvents 1.0, read back: structured mode (content-type
// application/cloudevents+json, the event as one JSON object with the payload in `data`) and
// binary mode (ce-* headers, percent-encoded as the HTTP binding says, the payload as the body).
//
// | field            | structured (JSON member)  | binary (HTTP header)      |
// |------------------|---------------------------|---------------------------|
// | id               | id                        | ce-id                     |
// | eventType        | type                      | ce-type                   |
// | aggregateId      | subject                   | ce-subject                |
// | aggregateType    | aggregatetype (extension) | ce-aggregatetype          |
// | aggregateVersion | aggregateversion (number) | ce-aggregateversion       |
// | createdAt        | time                      | ce-time                   |
// | payload          | data (or data_base64)     | the body (JSON)           |
// | headers          | other extension members   | other ce-* headers        |
//
// Event headers become extensions only when their name is one (lowercase letters and digits,
// at most 20): others do not travel over HTTP, except traceparent/tracestate, which always do.
import {FieldReader, MessageDecodeError, parsePayload, type ConsumedEvent} from './event.js'

export type HttpHeaders = Record<string, string | string[] | undefined>

/** A request as a receiver has it: Node's lowercase headers and the body as read (text, bytes, or already parsed JSON). */
export interface HttpRequestLike {
  headers: HttpHeaders
  body: string | Uint8Array | object | null | undefined
}

// context attributes of the spec and of our contract: the rest are the event's headers
const ATTRIBUTES = new Set(['specversion', 'id', 'source', 'type', 'subject', 'time', 'datacontenttype', 'dataschema', 'data', 'data_base64', 'aggregatetype', 'aggregateversion'])

const header = (headers: HttpHeaders, name: string): string | undefined => {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

function bodyText(body: HttpRequestLike['body']): string {
  if (typeof body === 'string') return body
  if (body instanceof Uint8Array) return new TextDecoder().decode(body)
  return body == null ? '' : JSON.stringify(body) // a framework parsed it already
}

/** Which mode a request is in, or why it is not a CloudEvent. */
export function cloudEventMode(headers: HttpHeaders): 'structured' | 'binary' {
  const type = (header(headers, 'content-type') ?? '').split(';')[0].trim().toLowerCase()
  if (type === 'application/cloudevents+json') return 'structured'
  if (header(headers, 'ce-specversion') !== undefined) return 'binary'
  if (type === 'application/cloudevents-batch+json') throw new MessageDecodeError('cloudevent: batched mode is not supported; the outbox http publisher sends one event per request')
  throw new MessageDecodeError(`cloudevent: content-type ${JSON.stringify(type || '(none)')} without ce-specversion is neither structured nor binary mode`)
}

export function decodeCloudEvent(request: HttpRequestLike): ConsumedEvent {
  return cloudEventMode(request.headers) === 'structured' ? decodeStructured(request.body) : decodeBinary(request)
}

function decodeStructured(body: HttpRequestLike['body']): ConsumedEvent {
  const where = 'cloudevent'
  const parsed = typeof body === 'object' && body !== null && !(body instanceof Uint8Array) ? body : parsePayload(bodyText(body), where)
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new MessageDecodeError(`${where}: the body is not a JSON object`)
  const o = parsed as Record<string, unknown>
  const f = new FieldReader(where, (name) => (o[name] == null ? undefined : String(o[name])))
  checkSpecVersion(f.required('specversion'))
  let payload: unknown = o.data
  if (o.data === undefined && typeof o.data_base64 === 'string') payload = parsePayload(Buffer.from(o.data_base64, 'base64').toString('utf8'), `${where} data_base64`)
  else if (o.data === undefined) throw new MessageDecodeError(`${where}: no data`)
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(o)) if (!ATTRIBUTES.has(name) && value != null && typeof value !== 'object') headers[name] = String(value)
  return {...identity(f), payload, headers}
}

function decodeBinary(request: HttpRequestLike): ConsumedEvent {
  const where = 'cloudevent (binary)'
  const decoded = (name: string): string | undefined => {
    const raw = header(request.headers, `ce-${name}`)
    if (raw === undefined) return undefined
    try {
      return decodeURIComponent(raw)
    } catch {
      throw new MessageDecodeError(`${where}: ce-${name} is not percent-encoded UTF-8`)
    }
  }
  const f = new FieldReader(where, decoded)
  checkSpecVersion(f.required('specversion'))
  const headers: Record<string, string> = {}
  for (const name of Object.keys(request.headers)) {
    const attribute = name.toLowerCase().startsWith('ce-') ? name.slice(3).toLowerCase() : undefined
    if (attribute && !ATTRIBUTES.has(attribute)) headers[attribute] = decoded(attribute)!
  }
  const body = request.body
  const payload = typeof body === 'object' && body !== null && !(body instanceof Uint8Array) ? body : parsePayload(bodyText(body), where)
  return {...identity(f), payload, headers}
}

function checkSpecVersion(version: string): void {
  if (version !== '1.0') throw new MessageDecodeError(`cloudevent: specversion ${JSON.stringify(version)} is not 1.0`)
}

function identity(f: FieldReader): Omit<ConsumedEvent, 'payload' | 'headers'> {
  return {
    id: f.required('id'),
    eventType: f.required('type'),
    aggregateType: f.optional('aggregatetype'),
    aggregateId: f.required('subject'),
    aggregateVersion: f.version('aggregateversion'),
    createdAt: f.time('time'),
  }
}
