// The relay's PRODUCER span, one per publish (OpenTelemetry messaging conventions): for one
// event a child of the context the event stored when it was written, so it sits in the
// request's trace; for a batch, linked to every event's stored context. It changes nothing in
// the messages: they carry the stored, starting context (the CloudEvents distributed tracing
// extension's rule), which the consumer's span continues.
import type {Attributes, Link} from '@opentelemetry/api'
import {activeTracing} from './active.js'
import {eventHeaders} from '../publishers/envelope.js'
import type {Publisher, PublishResult} from '../publishers/types.js'
import type {ClaimedEvent} from '../schema/event-row.js'
import {storedSpanContext, TRACER_NAME} from './trace-context.js'

export interface PublishSpan {
  /** ends the span with the publisher's results: an error status when any event failed */
  end(results: readonly PublishResult[]): void
}

/** Starts the span before publisher.publish(events); undefined without @opentelemetry/api. */
export function startPublishSpan(publisher: Publisher, events: readonly ClaimedEvent[]): PublishSpan | undefined {
  const api = activeTracing()
  if (!api) return undefined
  const stored = events.map((event) => storedSpanContext(api, eventHeaders(event)))
  const destinations = new Set(events.map((event) => publisher.messaging?.destination(event)))
  // a batch names its destination only when all of its events go there
  const destination = destinations.size === 1 ? [...destinations][0] : undefined
  const attributes: Attributes = {
    'messaging.system': publisher.messaging?.system ?? publisher.name,
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
  }
  if (destination !== undefined) attributes['messaging.destination.name'] = destination
  let parent = api.context.active()
  let links: Link[] = []
  if (events.length === 1) {
    attributes['messaging.message.id'] = events[0].id
    if (stored[0]) parent = api.trace.setSpanContext(parent, stored[0])
  } else {
    attributes['messaging.batch.message_count'] = events.length
    links = stored.flatMap((context) => (context ? [{context}] : []))
  }
  const name = destination === undefined ? 'send' : `send ${destination}`
  const span = api.trace.getTracer(TRACER_NAME).startSpan(name, {kind: api.SpanKind.PRODUCER, attributes, links}, parent)
  return {
    end(results) {
      const failed = results.filter((r): r is PublishResult & {ok: false} => !r.ok)
      if (failed.length > 0) {
        span.setAttribute('error.type', failed.some((f) => f.permanent === true) ? 'permanent' : 'retryable')
        span.setStatus({code: api.SpanStatusCode.ERROR, message: `${failed.length} of ${results.length} not sent: ${failed[0].error}`})
      }
      span.end()
    },
  }
}
