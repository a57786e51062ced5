// Between relay and consumer: the relay's publishers on one side, a consumer-side message
// source on the other. The loopback broker is the default; amqp:// and nats:// are real ones.
import type {Publisher} from '../../publishers/types.js'
import type {NewEvent} from '../../producer.js'
import {uuidv7} from '../../core/uuid.js'
import type {CloudEvent} from '../broker.js'
import type {DeliveredEvent} from '../business-scenario.js'

export type BrokerSpec = {kind: 'loopback'; url: string} | {kind: 'amqp'; url: string} | {kind: 'nats'; url: string}

export interface SourceMessage {
  event: DeliveredEvent
  ack(): Promise<void>
}

export interface MessageSource {
  /** the next message, or null after a short wait */
  next(): Promise<SourceMessage | null>
  ack(message: SourceMessage): Promise<void>
  close(): Promise<void>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The relay's publisher for the broker (the same code `outbox relay` runs). */
export async function relayPublisher(spec: BrokerSpec, prefix: string): Promise<Publisher> {
  const {createPublisher} = await import('../../publishers/index.js')
  if (spec.kind === 'loopback') return createPublisher('http', {target: `${spec.url}/publish`, timeoutMs: 3000})
  return (await import('./transport-brokers.js')).brokerPublisher(spec, prefix)
}

/** For the dual-write strategies: the producer publishes directly, with the same publisher. */
export async function openPublisher(spec: BrokerSpec, prefix = ''): Promise<{send(events: NewEvent[]): Promise<void>; close(): Promise<void>}> {
  const publisher = await relayPublisher(spec, prefix)
  return {
    async send(events) {
      if (events.length === 0) return
      const claimed = events.map((e) => ({
        id: e.id ?? uuidv7(),
        eventType: e.eventType,
        aggregateType: e.aggregateType ?? null,
        aggregateId: e.aggregateId,
        aggregateVersion: e.aggregateVersion ?? null,
        payload: JSON.stringify(e.payload),
        headers: null,
        createdAt: new Date(),
        attempts: 1,
      }))
      const results = await publisher.publish(claimed)
      const failed = results.find((r) => !r.ok)
      if (failed && !failed.ok) throw new Error(`direct publish failed: ${failed.error}`)
    },
    close: () => publisher.close(),
  }
}

function fromCloudEvent(e: CloudEvent): DeliveredEvent {
  const version = e.aggregateversion
  return {
    id: e.id,
    eventType: String(e.type ?? ''),
    aggregateType: e.aggregatetype == null ? null : String(e.aggregatetype),
    aggregateId: String(e.subject ?? ''),
    aggregateVersion: version == null || version === '' ? null : Number(version),
    payload: e.data,
  }
}

export async function openSource(spec: BrokerSpec, consumer: string, prefix: string): Promise<MessageSource> {
  if (spec.kind === 'loopback') return loopbackSource(spec.url)
  return (await import('./transport-brokers.js')).brokerSource(spec, prefix, consumer)
}

function loopbackSource(base: string): MessageSource {
  const source: MessageSource = {
    async next() {
      let response: Response
      try {
        response = await fetch(`${base}/next?wait=1000`, {signal: AbortSignal.timeout(5000)})
      } catch {
        await sleep(100) // broker down (an outage scenario): try again
        return null
      }
      if (response.status !== 200) {
        await response.body?.cancel()
        return null
      }
      const body = (await response.json()) as {tag: number; event: CloudEvent}
      const message: SourceMessage = {
        event: fromCloudEvent(body.event),
        ack: async () => {
          for (let i = 0; i < 50; i++) {
            try {
              const r = await fetch(`${base}/ack?tag=${body.tag}`, {method: 'POST'})
              await r.body?.cancel()
              return
            } catch {
              await sleep(100)
            }
          }
        },
      }
      return message
    },
    ack: (m) => m.ack(),
    async close() {},
  }
  return source
}
