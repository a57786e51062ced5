// Real brokers between the relay's publishers and the chaos consumer, in scratch names per run.
// Both ends are the shipped code: the relay's publisher on one side, the broker's consumer
// runtime (src/consume/) on the other, as `outbox relay` and `outbox consume` run them:
// RabbitMQ: topic exchange <prefix>_x, quorum queue <prefix>_q (dead letters in <prefix>_q.dead-letter);
// NATS JetStream: stream <prefix>_events on <prefix>.>, durable pull consumer <prefix>_c;
// Redis Streams: stream <prefix>_stream, one consumer group; a restarted consumer takes over
//   what its dead predecessor left pending (XAUTOCLAIM).
// Redeliveries come quickly (NATS AckWait, Redis claim idle time: 1.5 s) so a run drains soon
// after a consumer is killed; the watch loop waits that long before it calls a run quiet.
import {createPublisher} from '../../publishers/index.js'
import type {Publisher} from '../../publishers/types.js'
import type {DeliverySource} from '../../consume/loop.js'
import type {RealBroker} from './transport.js'
import {loadAmqplib, loadNats, loadRedis} from '../../core/broker-clients.js'

/** how long a real broker leaves a message unacked before another delivery */
export const REDELIVER_MS = 1500

const names = (prefix: string) => ({
  exchange: `${prefix}_x`,
  queue: `${prefix}_q`,
  deadLetter: `${prefix}_q.dead-letter`,
  stream: `${prefix}_events`,
  subjectPrefix: `${prefix}.`,
  durable: `${prefix}_c`,
  redisStream: `${prefix}_stream`,
})

const natsServers = (url: string) => url.replace(/^nats:\/\//i, '')

/** The relay's publisher for a real broker; timeoutMs: the relay's publishTimeoutMs (a publish not acked by then fails). */
export async function brokerPublisher(spec: RealBroker, prefix: string, timeoutMs: number): Promise<Publisher> {
  const n = names(prefix)
  if (spec.kind === 'amqp') return createPublisher('amqp', {target: spec.url, exchange: n.exchange, timeoutMs})
  if (spec.kind === 'nats') return createPublisher('nats', {target: natsServers(spec.url), subjectPrefix: n.subjectPrefix, stream: n.stream, timeoutMs})
  return createPublisher('redis', {target: spec.url, stream: n.redisStream, timeoutMs})
}

/**
 * The broker's runtime source, as `outbox consume` opens it (one message at a time); timeoutMs:
 * the runtime's own (connect, and how long a silent connection is kept), its default when absent.
 */
export async function brokerSource(spec: RealBroker, prefix: string, consumer: string, maxAttempts: number, timeoutMs?: number): Promise<DeliverySource> {
  const n = names(prefix)
  if (spec.kind === 'amqp') return (await import('../../consume/amqp.js')).openAmqpSource({url: spec.url, queue: n.queue, exchange: n.exchange, timeoutMs}, consumer, 1)
  if (spec.kind === 'nats') {
    const {openNatsSource} = await import('../../consume/nats.js')
    return openNatsSource({url: spec.url, stream: n.stream, durable: n.durable, ackWaitMs: REDELIVER_MS, timeoutMs}, 1, maxAttempts)
  }
  // the default consumer name (host-pid): a restarted consumer is another member of the group
  return (await import('../../consume/redis.js')).openRedisSource({url: spec.url, stream: n.redisStream, claimIdleMs: REDELIVER_MS, timeoutMs}, consumer, 1)
}

/**
 * Declares what must exist before the relay publishes: the RabbitMQ queue and its binding (by
 * the runtime's own declaration, opening it once: a difference would fail the consumer), the
 * JetStream stream (in memory). The NATS durable and the Redis group start at the stream's
 * beginning, so the consumer creates them whenever it comes.
 */
export async function prepareBroker(spec: RealBroker, prefix: string, consumer: string): Promise<void> {
  const n = names(prefix)
  if (spec.kind === 'amqp') {
    const source = await brokerSource(spec, prefix, consumer, 1)
    await source.stop()
    await source.close()
  } else if (spec.kind === 'nats') {
    await withJetStream(spec.url, (jsm, nats) => jsm.streams.add({name: n.stream, subjects: [`${n.subjectPrefix}>`], storage: nats.StorageType.Memory}))
  }
}

export async function cleanupBroker(spec: RealBroker, prefix: string): Promise<void> {
  const n = names(prefix)
  if (spec.kind === 'amqp') {
    const amqp = await loadAmqplib()
    const connection = await amqp.connect(spec.url, {timeout: 5000})
    try {
      const channel = await connection.createChannel()
      for (const queue of [n.queue, n.deadLetter]) await channel.deleteQueue(queue)
      for (const exchange of [n.exchange, n.deadLetter]) await channel.deleteExchange(exchange)
      await channel.close()
    } finally {
      await connection.close()
    }
  } else if (spec.kind === 'nats') {
    await withJetStream(spec.url, (jsm) => jsm.streams.delete(n.stream).catch(() => false))
  } else {
    const {createClient} = await loadRedis()
    const client = createClient({url: spec.url, socket: {connectTimeout: 5000}})
    await client.connect()
    try {
      await client.del([n.redisStream, `${n.redisStream}:dead`])
    } finally {
      await client.close()
    }
  }
}

async function withJetStream(url: string, fn: (jsm: import('nats').JetStreamManager, nats: typeof import('nats')) => Promise<unknown>): Promise<void> {
  const nats = await loadNats()
  const nc = await nats.connect({servers: natsServers(url), timeout: 5000})
  try {
    await fn(await nc.jetstreamManager(), nats)
  } finally {
    await nc.close()
  }
}
