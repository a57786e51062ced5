// The consumer's CONSUMER span around one Consumer.handle (OpenTelemetry messaging
// conventions, operation "process"): its parent is the context the message carries, the one
// the event stored when it was written, so the handler continues the request's trace. The
// effect runs inside it: the app's own spans and its database client's are its children.
import type {Attributes} from '@opentelemetry/api'
import {activeTracing} from './active.js'
import {storedSpanContext, TRACER_NAME} from './trace-context.js'

/** Where a message came from, as the consumer's span names it. */
export interface MessageSource {
  /** messaging.system: rabbitmq, nats, redis, http */
  system: string
  /** messaging.destination.name: the queue, subject or stream it was read from */
  destination?: string
}

/** What the span reads of the event. */
export interface TracedEvent {
  id: string
  headers?: Readonly<Record<string, string>> | null
}

/** Runs `handle` inside the span; the span records its outcome, or the error it threw. */
export async function inProcessSpan<T extends string>(event: TracedEvent, consumer: string, source: MessageSource | undefined, handle: () => Promise<T>): Promise<T> {
  const api = activeTracing()
  if (!api) return handle()
  const attributes: Attributes = {
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.message.id': event.id,
    'messaging.consumer.group.name': consumer,
  }
  if (source) attributes['messaging.system'] = source.system
  if (source?.destination) attributes['messaging.destination.name'] = source.destination
  const active = api.context.active()
  const stored = storedSpanContext(api, event.headers)
  const parent = stored ? api.trace.setSpanContext(active, stored) : active
  const name = source?.destination ? `process ${source.destination}` : 'process'
  const span = api.trace.getTracer(TRACER_NAME).startSpan(name, {kind: api.SpanKind.CONSUMER, attributes}, parent)
  return api.context.with(api.trace.setSpan(parent, span), async () => {
    try {
      const outcome = await handle()
      span.setAttribute('outbox.consume.outcome', outcome)
      return outcome
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error))
      span.setStatus({code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error)})
      throw error
    } finally {
      span.end()
    }
  })
}
