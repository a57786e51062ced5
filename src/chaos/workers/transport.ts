// Between relay and consumer: the relay's publishers on one side, the consumer runtime's
// delivery source on the other. The loopback broker is the default; amqp://, nats:// and
// redis:// are real ones.
import type {DeliverySource} from '../../consume/loop.js'
import type {Publisher} from '../../publishers/types.js'
import type {NewEvent} from '../../producer.js'
import {uuidv7} from '../../core/uuid.js'
import type {ConsumerPoll} from '../scenarios/types.js'

/** how long a publish may take before it fails: the relays' default (RelaySettings.publishTimeoutMs), and the dual-write producer's */
export const PUBLISH_TIMEOUT_MS = 5000

/** a broker we ship a consumer runtime for */
export type RealBroker = {kind: 'amqp' | 'nats' | 'redis'; url: string}
export type BrokerSpec = {kind: 'loopback'; url: string} | RealBroker

/** The relay's publisher for the broker (the same code `outbox relay` runs), giving up on a publish after timeoutMs. */
export async function relayPublisher(spec: BrokerSpec, prefix: string, timeoutMs = PUBLISH_TIMEOUT_MS): Promise<Publisher> {
  const {createPublisher} = await import('../../publishers/index.js')
  if (spec.kind === 'loopback') return createPublisher('http', {target: `${spec.url}/publish`, timeoutMs})
  return (await import('./transport-brokers.js')).brokerPublisher(spec, prefix, timeoutMs)
}

/** For the dual-write strategies: the producer publishes directly, with the same publisher. */
export async function openPublisher(spec: BrokerSpec, prefix: string): Promise<{send(events: NewEvent[]): Promise<void>; close(): Promise<void>}> {
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

/** The consumer's source: the loopback adapter, or the real broker's shipped runtime source. */
export async function openSource(spec: BrokerSpec, consumer: string, prefix: string, maxAttempts: number, poll?: ConsumerPoll): Promise<DeliverySource> {
  if (spec.kind === 'loopback') return (await import('./loopback-source.js')).loopbackSource(spec.url, poll)
  return (await import('./transport-brokers.js')).brokerSource(spec, prefix, consumer, maxAttempts, poll?.brokerTimeoutMs)
}
