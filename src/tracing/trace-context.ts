// The W3C Trace Context an event carries in its headers (traceparent, tracestate): captured by
// writeEvent from the active span, read back by the relay's and the consumers' spans. Written
// and read here, not through the app's registered propagator: the outbox's message contract
// (and the CloudEvents distributed tracing extension) is W3C whatever the app propagates
// in-process, and a tracer provider set up without a propagator still gets one trace.
import type {SpanContext} from '@opentelemetry/api'
import {openTelemetry, type OpenTelemetryApi} from '../core/opentelemetry.js'

/** The instrumentation scope our spans are reported under. */
export const TRACER_NAME = 'outbox'

type Headers = Record<string, string> | null | undefined

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/**
 * The caller's headers with the active span's traceparent (and tracestate) added: what
 * writeEvent stores. Unchanged without @opentelemetry/api, without an active span, or when
 * the caller passed a traceparent or tracestate of its own.
 */
export function withActiveTraceContext(headers: Headers): Headers {
  const api = openTelemetry()
  if (!api) return headers
  // anything but an object of headers is left for serialiseHeaders to refuse
  if (headers != null && (typeof headers !== 'object' || Array.isArray(headers))) return headers
  if (headers != null && Object.keys(headers).some((name) => isTraceHeader(name))) return headers
  const span = api.trace.getSpanContext(api.context.active())
  if (!span || !api.isSpanContextValid(span)) return headers
  const trace: Record<string, string> = {traceparent: traceparent(span)}
  const state = span.traceState?.serialize()
  if (state) trace.tracestate = state
  return {...headers, ...trace}
}

/** The span context stored in an event's headers; undefined when there is none or it is malformed. */
export function storedSpanContext(api: OpenTelemetryApi, headers: Readonly<Record<string, string>> | null | undefined): SpanContext | undefined {
  const parent = headers && header(headers, 'traceparent')
  const m = parent ? TRACEPARENT.exec(parent.trim()) : null
  if (!m) return undefined
  const [, version, traceId, spanId, flags, more] = m
  // version ff is invalid; version 00 has exactly four fields (later versions may add some)
  if (version === 'ff' || (version === '00' && more)) return undefined
  const context: SpanContext = {traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true}
  if (!api.isSpanContextValid(context)) return undefined
  const state = header(headers!, 'tracestate')
  if (state) context.traceState = api.createTraceState(state)
  return context
}

function traceparent(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

function isTraceHeader(name: string): boolean {
  const lower = name.toLowerCase()
  return lower === 'traceparent' || lower === 'tracestate'
}

/** A header by its lowercase name, whatever case the transport kept. */
function header(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  if (typeof headers[name] === 'string') return headers[name]
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name && typeof value === 'string') return value
  return undefined
}
