// POST one CloudEvents 1.0 request per event (structured JSON by default, binary as an option),
// over keep-alive connections with bounded concurrency and a timeout per request.
// 2xx: ok. 408/425/429/5xx, timeouts, refused or reset connections: retryable.
// Any other status (4xx, an unfollowed 3xx): permanent, with the status and body recorded.
import type {ClaimedEvent} from '../schema/event-row.js'
import {eventHeaders} from './envelope.js'
import {checkOptions, headerMap, integer, milliseconds, oneOf, target, text, type OptionRules} from './options.js'
import type {MessagingTarget, Publisher, PublishResult} from './types.js'

export type CloudEventsMode = 'structured' | 'binary'

export interface HttpPublisherOptions {
  /** the URL every event is POSTed to */
  target: string
  mode?: CloudEventsMode
  /** CloudEvents `source` (default "outbox") */
  source?: string
  /** per request (default 10s) */
  timeoutMs?: number
  /** requests in flight at once (default 16) */
  concurrency?: number
  /** extra request headers, e.g. Authorization (never logged) */
  headers?: Record<string, string>
  /** longest response body kept in last_error (default 500 characters) */
  maxErrorBody?: number
}

export const optionRules: OptionRules<HttpPublisherOptions> = {
  target: target(['http', 'https'], 'https://events.example.com/ingest'),
  mode: oneOf('structured', 'binary'),
  source: text(),
  timeoutMs: milliseconds(),
  concurrency: integer(1, 10_000),
  headers: headerMap(),
  maxErrorBody: integer(0),
}

const RETRYABLE_STATUS = new Set([408, 425, 429])
// CloudEvents context attributes our envelope sets itself; event headers may not override them.
const RESERVED = new Set(['specversion', 'id', 'source', 'type', 'subject', 'time', 'datacontenttype', 'dataschema', 'data', 'data_base64', 'aggregatetype', 'aggregateversion'])
// Forwarded as HTTP headers too, so tracing middleware on the receiving side sees them.
const TRACE_HEADERS = ['traceparent', 'tracestate']

/** CloudEvents extension names: lowercase letters and digits, at most 20 characters. */
function extensionName(key: string): string | undefined {
  const name = key.toLowerCase()
  return /^[a-z0-9]{1,20}$/.test(name) && !RESERVED.has(name) ? name : undefined
}

export function structuredBody(event: ClaimedEvent, source: string): string {
  let text =
    `{"specversion":"1.0","id":${JSON.stringify(event.id)},"source":${JSON.stringify(source)}` +
    `,"type":${JSON.stringify(event.eventType)},"subject":${JSON.stringify(event.aggregateId)}` +
    `,"time":${JSON.stringify(event.createdAt.toISOString())},"datacontenttype":"application/json"`
  if (event.aggregateType !== null) text += `,"aggregatetype":${JSON.stringify(event.aggregateType)}`
  if (event.aggregateVersion !== null) text += `,"aggregateversion":${event.aggregateVersion}`
  for (const [key, value] of Object.entries(eventHeaders(event))) {
    const name = extensionName(key)
    if (name) text += `,${JSON.stringify(name)}:${JSON.stringify(value)}`
  }
  return `${text},"data":${event.payload}}`
}

function binaryHeaders(event: ClaimedEvent, source: string): Record<string, string> {
  const h: Record<string, string> = {
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-id': event.id,
    'ce-source': source,
    'ce-type': event.eventType,
    'ce-subject': event.aggregateId,
    'ce-time': event.createdAt.toISOString(),
  }
  if (event.aggregateType !== null) h['ce-aggregatetype'] = event.aggregateType
  if (event.aggregateVersion !== null) h['ce-aggregateversion'] = String(event.aggregateVersion)
  for (const [key, value] of Object.entries(eventHeaders(event))) {
    const name = extensionName(key)
    if (name) h[`ce-${name}`] = value
  }
  for (const name of Object.keys(h)) if (name.startsWith('ce-')) h[name] = percentEncoded(h[name])
  return h
}

/**
 * A ce-* header value as the CloudEvents HTTP binding (3.1.3.2) writes it: space, '"', '%' and
 * everything outside printable ASCII percent-encoded as UTF-8. Raw, an aggregate id such as
 * '订单-1' made fetch refuse the request on every attempt, and 'Zürich-1' went out as Latin-1.
 */
function percentEncoded(value: string): string {
  return value.replace(/[^\u0021\u0023\u0024\u0026-\u007e]/gu, (ch) => (ch.length === 1 && ch >= '\ud800' && ch <= '\udfff' ? '%EF%BF%BD' : encodeURIComponent(ch)))
}

export class HttpPublisher implements Publisher {
  readonly name = 'http'
  // the URL without its query, which may hold a token
  readonly messaging: MessagingTarget = {system: 'http', destination: () => `${this.target.origin}${this.target.pathname}`}
  private readonly target: URL
  private readonly mode: CloudEventsMode
  private readonly source: string
  private readonly timeoutMs: number
  private readonly concurrency: number
  private readonly extraHeaders: Record<string, string>
  private readonly maxErrorBody: number

  constructor(given: HttpPublisherOptions) {
    const options = checkOptions('http', given, optionRules)
    this.target = new URL(options.target)
    this.mode = options.mode ?? 'structured'
    this.source = options.source ?? 'outbox'
    this.timeoutMs = options.timeoutMs ?? 10_000
    this.concurrency = options.concurrency ?? 16
    this.extraHeaders = {...options.headers}
    // fetch refuses URLs with credentials: user:password@ becomes Basic authorization.
    if (this.target.username || this.target.password) {
      const credentials = `${decodeURIComponent(this.target.username)}:${decodeURIComponent(this.target.password)}`
      this.extraHeaders.authorization ??= `Basic ${Buffer.from(credentials).toString('base64')}`
      this.target.username = ''
      this.target.password = ''
    }
    this.maxErrorBody = options.maxErrorBody ?? 500
  }

  async publish(events: readonly ClaimedEvent[]): Promise<PublishResult[]> {
    const results = new Array<PublishResult>(events.length)
    let next = 0
    const worker = async () => {
      while (next < events.length) {
        const i = next++
        results[i] = await this.post(events[i])
      }
    }
    await Promise.all(Array.from({length: Math.min(this.concurrency, events.length)}, worker))
    return results
  }

  private request(event: ClaimedEvent): {headers: Record<string, string>; body: string} {
    const trace = eventHeaders(event)
    const headers: Record<string, string> = {...this.extraHeaders, 'idempotency-key': event.id}
    for (const name of TRACE_HEADERS) if (trace[name]) headers[name] = trace[name]
    if (this.mode === 'binary') return {headers: {...headers, ...binaryHeaders(event, this.source)}, body: event.payload}
    return {headers: {...headers, 'content-type': 'application/cloudevents+json'}, body: structuredBody(event, this.source)}
  }

  private async post(event: ClaimedEvent): Promise<PublishResult> {
    const {headers, body} = this.request(event)
    let response: Response
    try {
      response = await fetch(this.target, {method: 'POST', headers, body, signal: AbortSignal.timeout(this.timeoutMs), redirect: 'manual'})
    } catch (error) {
      const why = `POST ${this.target.origin}${this.target.pathname}: ${describeFetchError(error, this.timeoutMs)}`
      // a request fetch refuses to build (a header value with CR/LF, say) fails the same way every time
      if (error instanceof TypeError && !(error as {cause?: unknown}).cause) return {ok: false, error: `${why} (the request cannot be sent as it is)`, permanent: true}
      return {ok: false, error: why, unreachable: unreachable(error)}
    }
    if (response.status >= 200 && response.status < 300) {
      // Drain the body so the keep-alive connection goes back to the pool.
      await response.arrayBuffer().catch(() => {})
      return {ok: true}
    }
    const text = await response.text().catch(() => '')
    const snippet = text.length > this.maxErrorBody ? `${text.slice(0, this.maxErrorBody)}…` : text
    const error = `HTTP ${response.status}${response.statusText ? ' ' + response.statusText : ''}${snippet ? `: ${snippet}` : ''}`
    if (response.status >= 500 || RETRYABLE_STATUS.has(response.status)) return {ok: false, error}
    return {ok: false, error, permanent: true}
  }

  async close(): Promise<void> {}
}

// no connection to the receiver at all (not a request it could not take: a bad header is no outage)
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET'])

function unreachable(error: unknown): boolean {
  return UNREACHABLE.has(String((error as {cause?: {code?: string}})?.cause?.code ?? ''))
}

function describeFetchError(error: unknown, timeoutMs: number): string {
  const e = error as {name?: string; message?: string; cause?: {code?: string; message?: string}}
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timed out after ${timeoutMs}ms`
  const cause = e?.cause
  if (cause?.code) return `${cause.code}${cause.message && !cause.message.includes(cause.code) ? ` ${cause.message}` : ''}`.trim()
  return cause?.message ?? e?.message ?? String(error)
}
