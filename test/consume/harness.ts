// One shape for the three brokers' runtime tests: a fresh topology per test, our publisher to
// fill it, the runtime to drain it, and the broker's dead letters read with its plain client.
import {consumeAmqp} from '../../src/consume/amqp.js'
import type {ConsumeSummary} from '../../src/consume/loop.js'
import {consumeNats} from '../../src/consume/nats.js'
import {consumeRedis} from '../../src/consume/redis.js'
import type {RuntimeOptions} from '../../src/consume/runtime.js'
import {AmqpPublisher} from '../../src/publishers/amqp.js'
import {NatsPublisher} from '../../src/publishers/nats.js'
import {RedisPublisher} from '../../src/publishers/redis.js'
import type {Publisher} from '../../src/publishers/types.js'
import type {ClaimedEvent} from '../../src/schema/event-row.js'
import {BROKER_URLS, uniqueName, type BrokerName} from '../helpers/brokers.js'

export interface DeadLetter {
  /** the outbox event id, or the body of a message that was none */
  id: string
  reason?: string
}

export interface Topology {
  /** `outbox consume` flags for this topology */
  cliFlags: string[]
  /** a new publisher of ours onto this topology */
  publisher(): Publisher
  publish(events: ClaimedEvent[]): Promise<void>
  /** a message on the same route that is no outbox event (body "hello") */
  publishForeign(): Promise<void>
  run(options: Omit<RuntimeOptions, 'db'>): Promise<ConsumeSummary>
  deadLetters(): Promise<DeadLetter[]>
  cleanup(): Promise<void>
}

async function published(publisher: Publisher, events: ClaimedEvent[]): Promise<void> {
  const results = await publisher.publish(events)
  await publisher.close()
  const failed = results.find((r) => !r.ok)
  if (failed) throw new Error(`publish failed: ${JSON.stringify(failed)}`)
}

async function amqp(db: RuntimeOptions['db']): Promise<Topology> {
  const url = BROKER_URLS.amqp
  const connection = await (await import('amqplib')).default.connect(url)
  const admin = await connection.createChannel()
  const queue = uniqueName('consume_q')
  const exchange = uniqueName('consume_x')
  const dead: DeadLetter[] = []
  const publisher = () => new AmqpPublisher({target: url, exchange, timeoutMs: 3000})
  const topology: Topology = {
    cliFlags: ['--queue', queue, '--exchange', exchange],
    publisher,
    publish: (events) => published(publisher(), events),
    async publishForeign() {
      admin.publish(exchange, 'order.created', Buffer.from('hello'), {})
    },
    run: (options) => consumeAmqp({url, queue, exchange}, {db, ...options}),
    async deadLetters() {
      for (let m; (m = await admin.get(`${queue}.dead-letter`, {noAck: true})); ) {
        dead.push({id: String(m.properties.headers?.['outbox-event-id'] ?? m.content.toString())})
      }
      return dead
    },
    async cleanup() {
      for (const name of [queue, `${queue}.dead-letter`]) await admin.deleteQueue(name).catch(() => {})
      for (const name of [exchange, `${queue}.dead-letter`]) await admin.deleteExchange(name).catch(() => {})
      await connection.close()
    },
  }
  // the runtime's own declaration (it asserts the same: a difference would fail its run), made
  // before the publisher sends so nothing is unroutable
  await admin.assertExchange(exchange, 'topic', {durable: true})
  await admin.assertExchange(`${queue}.dead-letter`, 'fanout', {durable: true})
  await admin.assertQueue(`${queue}.dead-letter`, {durable: true, arguments: {'x-queue-type': 'quorum'}})
  await admin.bindQueue(`${queue}.dead-letter`, `${queue}.dead-letter`, '')
  await admin.assertQueue(queue, {durable: true, arguments: {'x-queue-type': 'quorum', 'x-dead-letter-exchange': `${queue}.dead-letter`}})
  await admin.bindQueue(queue, exchange, '#')
  return topology
}

async function nats(db: RuntimeOptions['db']): Promise<Topology> {
  const url = BROKER_URLS.nats
  const client = await import('nats')
  const nc = await client.connect({servers: url})
  const jsm = await nc.jetstreamManager()
  const stream = uniqueName('CONSUME')
  const prefix = `${stream.toLowerCase()}.`
  await jsm.streams.add({name: stream, subjects: [`${prefix}>`]})
  const dead: DeadLetter[] = []
  // terminated messages: the advisory names the stream sequence; read the message by it
  const advisories = nc.subscribe(`$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.${stream}.>`)
  const terminated: {stream_seq: number; reason?: string}[] = []
  void (async () => {
    for await (const m of advisories) terminated.push(m.json())
  })()
  const publisher = () => new NatsPublisher({target: url, subjectPrefix: prefix, stream, timeoutMs: 3000})
  return {
    cliFlags: ['--stream', stream],
    publisher,
    publish: (events) => published(publisher(), events),
    async publishForeign() {
      await nc.jetstream().publish(`${prefix}order.created`, new TextEncoder().encode('hello'))
    },
    run: (options) => consumeNats({url, stream}, {db, ...options}),
    async deadLetters() {
      for (const t of terminated.splice(0)) {
        const m = await jsm.streams.getMessage(stream, {seq: t.stream_seq})
        dead.push({id: m.header?.get('outbox-event-id') || m.string(), reason: t.reason})
      }
      return dead
    },
    async cleanup() {
      advisories.unsubscribe()
      await jsm.streams.delete(stream).catch(() => {})
      await nc.close()
    },
  }
}

async function redis(db: RuntimeOptions['db']): Promise<Topology> {
  const url = BROKER_URLS.redis
  const {createClient} = await import('redis')
  const client = createClient({url})
  await client.connect()
  const stream = uniqueName('consume')
  const publisher = () => new RedisPublisher({target: url, stream, timeoutMs: 3000})
  return {
    cliFlags: ['--stream', stream],
    publisher,
    publish: (events) => published(publisher(), events),
    async publishForeign() {
      await client.xAdd(stream, '*', {body: 'hello'})
    },
    run: (options) => consumeRedis({url, stream, claimIdleMs: 1000}, {db, ...options}),
    async deadLetters() {
      const entries = await client.xRange(`${stream}:dead`, '-', '+')
      return entries.map((e) => ({id: e.message.id ?? e.message.body, reason: e.message['outbox-dead-letter-reason']}))
    },
    async cleanup() {
      await client.del([stream, `${stream}:dead`])
      await client.close()
    },
  }
}

export const TOPOLOGIES: Record<BrokerName, (db: RuntimeOptions['db']) => Promise<Topology>> = {amqp, nats, redis}
