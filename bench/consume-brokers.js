// The consume suite's brokers: per run a fresh queue / stream filled by OUR publisher, then
// drained by one consumer, timed from its first message to its last ack:
//   plain(prefetch, sink)  the broker's plain client handing each message to a sink: receive +
//                          ack only (the ceiling), or a hand-written transaction on a bare pg
//                          Client per message (perMessage) or per batch of messages (batched)
//   runtime(options, lib)  our runtime (consumeAmqp / consumeNats / consumeRedis) of that build
// Names are unique to the run (bench_consume_<tag>) and everything is deleted by cleanup().
import {randomBytes} from 'node:crypto'
import {driver, lib} from './lib-under-test.js'

export const BROKER_URLS = {
  amqp: process.env.OUTBOX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  nats: process.env.OUTBOX_BENCH_NATS_URL ?? 'nats://127.0.0.1:4222',
  redis: process.env.OUTBOX_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
}

/** n events as the relay claims them: fresh UUID v7 ids, a small JSON payload. */
export function claimedEvents(n) {
  const createdAt = new Date()
  return Array.from({length: n}, (_, i) => ({
    id: lib.uuidv7(),
    eventType: 'order.created',
    aggregateType: 'order',
    aggregateId: `order-${i}`,
    aggregateVersion: 1,
    payload: JSON.stringify({n: i, amount: 42, currency: 'EUR'}),
    headers: null,
    createdAt,
    attempts: 1,
  }))
}

async function publishAll(publisher, events) {
  try {
    const results = await publisher.publish(events)
    const failed = results.find((r) => !r.ok)
    if (failed) throw new Error(`bench: our ${publisher.name} publisher failed: ${failed.error}`)
  } finally {
    await publisher.close()
  }
}

/**
 * What a plain client hands each message to: handle(id, ack) resolves once the message is acked.
 * Counts acks towards n and keeps the window from the first message to the n-th ack.
 */
function sink(n) {
  let resolve
  let reject
  const done = new Promise((res, rej) => ((resolve = res), (reject = rej)))
  const clock = {first: undefined, last: undefined, acked: 0}
  const s = {
    n,
    clock,
    done,
    failed: false,
    received: () => (clock.first ??= performance.now()),
    acked() {
      if (++clock.acked === n) {
        clock.last = performance.now()
        resolve(clock)
      }
    },
    fail(error) {
      s.failed = true
      reject(error)
    },
  }
  return s
}

/**
 * One message at a time per pg client: receive, `work` (the hand-written transaction) on a
 * free client when given (waiting for one), ack. Without work: receive + ack only, the ceiling.
 */
export function perMessage(n, work, clients = []) {
  const s = sink(n)
  const free = [...clients]
  const waiting = []
  const take = () => (free.length ? Promise.resolve(free.pop()) : new Promise((resolve) => waiting.push(resolve)))
  const give = (client) => (waiting.length ? waiting.shift()(client) : free.push(client))
  s.handle = async (id, ack) => {
    s.received()
    try {
      if (work) {
        // more messages in hand than clients: the spares wait for one, as in the runtime's loop
        const client = await take()
        try {
          await work(client, id)
        } finally {
          give(client)
        }
      }
      await ack()
      s.acked()
    } catch (error) {
      s.fail(error)
    }
  }
  return s
}

/**
 * Several messages in one transaction: messages gather while the previous batch's transaction
 * runs (at most max); each batch is workBatch(client, ids) (one transaction), then
 * every message of it is acked. One batch at a time, on one pg client.
 */
export function batched(n, workBatch, client, max = Infinity) {
  const s = sink(n)
  const waiting = []
  let running = false
  const drain = async () => {
    running = true
    try {
      while (waiting.length) {
        const batch = waiting.splice(0, max)
        await workBatch(client, batch.map((m) => m.id))
        await Promise.all(batch.map((m) => m.ack()))
        for (const m of batch) s.acked(), m.settled()
      }
    } catch (error) {
      s.fail(error)
    } finally {
      running = false
    }
  }
  s.handle = (id, ack) => {
    s.received()
    return new Promise((settled) => {
      waiting.push({id, ack, settled})
      // messages that arrived in the same read join the batch
      if (!running) (running = true), setImmediate(drain)
    })
  }
  return s
}

async function amqp(tag) {
  const url = BROKER_URLS.amqp
  const amqplib = await driver('amqplib')
  const connection = await amqplib.connect(url)
  const admin = await connection.createChannel()
  const queue = `bench_consume_${tag}`
  const exchange = `bench_consume_${tag}_x`
  const deadLetter = `${queue}.dead-letter`
  // the runtime's own declaration (consume/amqp.ts declare()), made before our publisher sends
  await admin.assertExchange(exchange, 'topic', {durable: true})
  await admin.assertExchange(deadLetter, 'fanout', {durable: true})
  await admin.assertQueue(deadLetter, {durable: true, arguments: {'x-queue-type': 'quorum'}})
  await admin.bindQueue(deadLetter, deadLetter, '')
  await admin.assertQueue(queue, {durable: true, arguments: {'x-queue-type': 'quorum', 'x-dead-letter-exchange': deadLetter}})
  await admin.bindQueue(queue, exchange, '#')
  return {
    queue,
    exchange,
    publish: (events) => publishAll(new lib.AmqpPublisher({target: url, exchange}), events),
    async plain(prefetch, s) {
      const conn = await amqplib.connect(url)
      const channel = await conn.createChannel()
      await channel.prefetch(prefetch)
      await channel.consume(queue, (m) => void s.handle(m.properties.messageId, async () => channel.ack(m)), {noAck: false})
      await s.done
      await channel.close()
      await conn.close()
      return s.clock
    },
    runtime: (options, library = lib) => library.consumeAmqp({url, queue, exchange}, options),
    async cleanup() {
      for (const name of [queue, deadLetter]) await admin.deleteQueue(name).catch(() => {})
      for (const name of [exchange, deadLetter]) await admin.deleteExchange(name).catch(() => {})
      await connection.close().catch(() => {})
    },
  }
}

async function nats(tag) {
  const url = BROKER_URLS.nats
  const client = await driver('nats')
  const nc = await client.connect({servers: url})
  const jsm = await nc.jetstreamManager()
  const stream = `BENCH_CONSUME_${tag}`
  const prefix = `bench_consume_${tag}.`
  await jsm.streams.add({name: stream, subjects: [`${prefix}>`]})
  return {
    publish: (events) => publishAll(new lib.NatsPublisher({target: url, subjectPrefix: prefix, stream}), events),
    async plain(prefetch, s) {
      // the idiomatic pull consumer: consume() keeps up to max_messages pulled ahead
      const durable = 'plain'
      await jsm.consumers.add(stream, {durable_name: durable, ack_policy: client.AckPolicy.Explicit, deliver_policy: client.DeliverPolicy.All})
      const consumer = await nc.jetstream().consumers.get(stream, durable)
      const messages = await consumer.consume({max_messages: prefetch})
      let inFlight = 0
      let slot
      void (async () => {
        for await (const m of messages) {
          while (inFlight >= prefetch) await new Promise((resolve) => (slot = resolve))
          inFlight++
          void s.handle(m.headers?.get('outbox-event-id'), async () => m.ack()).finally(() => (inFlight--, slot?.()))
        }
      })().catch((error) => s.fail(error))
      await s.done
      messages.stop()
      await nc.flush()
      return s.clock
    },
    runtime: (options, library = lib) => library.consumeNats({url, stream}, options),
    async cleanup() {
      await jsm.streams.delete(stream).catch(() => {})
      await nc.close().catch(() => {})
    },
  }
}

async function redis(tag) {
  const url = BROKER_URLS.redis
  const {createClient} = await driver('redis')
  const admin = createClient({url})
  await admin.connect()
  const stream = `bench_consume_${tag}`
  return {
    publish: (events) => publishAll(new lib.RedisPublisher({target: url, stream}), events),
    async plain(prefetch, s) {
      const c = createClient({url})
      await c.connect()
      await c.xGroupCreate(stream, 'plain', '0', {MKSTREAM: true})
      while (s.clock.acked < s.n && !s.failed) {
        const read = await c.xReadGroup('plain', 'plain', {key: stream, id: '>'}, {COUNT: prefetch, BLOCK: 1000})
        await Promise.all((read?.[0]?.messages ?? []).map((e) => s.handle(e.message.id, () => c.xAck(stream, 'plain', e.id))))
      }
      await s.done
      await c.close()
      return s.clock
    },
    runtime: (options, library = lib) => library.consumeRedis({url, stream, consumerName: 'bench'}, options),
    async cleanup() {
      await admin.del([stream, `${stream}:dead`]).catch(() => {})
      await admin.close().catch(() => {})
    },
  }
}

export const BROKERS = {amqp, nats, redis}

/** A fresh queue / stream on `broker`, named for this run. */
export const topology = (broker) => BROKERS[broker](randomBytes(3).toString('hex'))
