// Real brokers between the relay's publishers and the chaos consumer, in scratch names per run:
// RabbitMQ: topic exchange <prefix>_x, queue <prefix>_q bound with "#", manual acks, prefetch 1
//   (a consumer killed before acking gets the message again when its connection drops);
// NATS JetStream: stream <prefix>_events on <prefix>.>, durable pull consumer, explicit acks.
// The publishers put the payload in the body and the event's metadata in headers.
import {createPublisher} from '../../publishers/index.js'
import type {Publisher} from '../../publishers/types.js'
import type {DeliveredEvent} from '../business-scenario.js'
import type {BrokerSpec, MessageSource, SourceMessage} from './transport.js'

const names = (prefix: string) => ({exchange: `${prefix}_x`, queue: `${prefix}_q`, stream: `${prefix}_events`, subjectPrefix: `${prefix}.`, durable: `${prefix}_c`})

export async function brokerPublisher(spec: BrokerSpec, prefix: string): Promise<Publisher> {
  const n = names(prefix)
  if (spec.kind === 'amqp') return createPublisher('amqp', {url: spec.url, exchange: n.exchange, timeoutMs: 5000})
  return createPublisher('nats', {url: spec.url.replace(/^nats:\/\//i, ''), subjectPrefix: n.subjectPrefix, stream: n.stream, timeoutMs: 3000})
}

type Headers = Record<string, unknown>

function fromHeaders(h: Headers, body: string, fallbackId?: string): DeliveredEvent {
  const text = (k: string) => (h[k] == null ? null : String(h[k]))
  const version = text('outbox-aggregate-version')
  let payload: unknown = body
  try {
    payload = JSON.parse(body)
  } catch {}
  return {
    id: text('outbox-event-id') ?? fallbackId ?? '',
    eventType: text('outbox-event-type') ?? '',
    aggregateType: text('outbox-aggregate-type'),
    aggregateId: text('outbox-aggregate-id') ?? '',
    aggregateVersion: version == null ? null : Number(version),
    payload,
  }
}

export async function brokerSource(spec: BrokerSpec, prefix: string, _consumer: string): Promise<MessageSource> {
  return spec.kind === 'amqp' ? amqpSource(spec.url, prefix) : natsSource(spec.url, prefix)
}

async function withAmqpChannel(url: string, fn: (channel: import('amqplib').Channel) => Promise<unknown>): Promise<void> {
  const amqp = (await import('amqplib')).default
  const connection = await amqp.connect(url, {timeout: 5000})
  try {
    const channel = await connection.createChannel()
    await fn(channel)
    await channel.close()
  } finally {
    await connection.close()
  }
}

async function withJetStream(url: string, fn: (jsm: import('nats').JetStreamManager, nats: typeof import('nats')) => Promise<unknown>): Promise<void> {
  const nats = await import('nats')
  const nc = await nats.connect({servers: url.replace(/^nats:\/\//i, ''), timeout: 5000})
  try {
    await fn(await nc.jetstreamManager(), nats)
  } finally {
    await nc.close()
  }
}

/** Declares the scratch topology before any worker starts, so nothing is unroutable. */
export async function prepareBroker(spec: BrokerSpec, prefix: string): Promise<void> {
  const n = names(prefix)
  if (spec.kind === 'amqp') {
    await withAmqpChannel(spec.url, async (channel) => {
      // the same declaration as the amqp publisher's (a mismatch is PRECONDITION_FAILED)
      await channel.assertExchange(n.exchange, 'topic', {durable: true})
      await channel.assertQueue(n.queue, {durable: false})
      await channel.bindQueue(n.queue, n.exchange, '#')
    })
  } else if (spec.kind === 'nats') {
    await withJetStream(spec.url, async (jsm, nats) => {
      await jsm.streams.add({name: n.stream, subjects: [`${n.subjectPrefix}>`], storage: nats.StorageType.Memory})
      await jsm.consumers.add(n.stream, {durable_name: n.durable, ack_policy: nats.AckPolicy.Explicit, ack_wait: nats.nanos(1500), max_ack_pending: 1})
    })
  }
}

export async function cleanupBroker(spec: BrokerSpec, prefix: string): Promise<void> {
  const n = names(prefix)
  if (spec.kind === 'amqp') {
    await withAmqpChannel(spec.url, async (channel) => {
      await channel.deleteQueue(n.queue)
      await channel.deleteExchange(n.exchange)
    })
  } else if (spec.kind === 'nats') {
    await withJetStream(spec.url, (jsm) => jsm.streams.delete(n.stream).catch(() => false))
  }
}

async function amqpSource(url: string, prefix: string): Promise<MessageSource> {
  const amqp = (await import('amqplib')).default
  const connection = await amqp.connect(url, {timeout: 5000})
  const channel = await connection.createChannel()
  await channel.prefetch(1)
  const queue: SourceMessage[] = []
  let wake: (() => void) | undefined
  await channel.consume(
    names(prefix).queue,
    (msg) => {
      if (!msg) return
      const props = msg.properties as {headers?: Headers; messageId?: string}
      queue.push({event: fromHeaders(props.headers ?? {}, msg.content.toString('utf8'), props.messageId), ack: async () => channel.ack(msg)})
      wake?.()
    },
    {noAck: false},
  )
  return {
    async next() {
      if (!queue.length) await new Promise<void>((resolve) => ((wake = resolve), setTimeout(resolve, 500)))
      wake = undefined
      return queue.shift() ?? null
    },
    ack: (m) => m.ack(),
    async close() {
      await channel.close().catch(() => {})
      await connection.close().catch(() => {})
    },
  }
}

async function natsSource(url: string, prefix: string): Promise<MessageSource> {
  const nats = await import('nats')
  const n = names(prefix)
  const nc = await nats.connect({servers: url.replace(/^nats:\/\//i, ''), timeout: 5000})
  const consumer = await nc.jetstream().consumers.get(n.stream, n.durable)
  return {
    async next() {
      const m = await consumer.next({expires: 1000})
      if (!m) return null
      const h: Headers = {}
      for (const key of m.headers?.keys() ?? []) h[key.toLowerCase()] = m.headers!.get(key)
      return {event: fromHeaders(h, m.string()), ack: async () => void (await m.ackAck())}
    },
    ack: (m) => m.ack(),
    async close() {
      await nc.close()
    },
  }
}
