// The message contract, round trip on the real brokers: publish with our publisher, read with
// the broker's plain client, and decode with ours back to exactly the event the relay claimed.
import {createServer, type IncomingHttpHeaders} from 'node:http'
import type {AddressInfo} from 'node:net'
import {readFileSync} from 'node:fs'
import {PassThrough} from 'node:stream'
import {afterAll, describe, expect, it} from 'vitest'
import {decodeAmqp, decodeEnvelope, decodeNats, decodeRedis} from '../../src/consume/decode.js'
import {decodeCloudEvent} from '../../src/consume/cloudevents.js'
import {AmqpPublisher} from '../../src/publishers/amqp.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import {NatsPublisher} from '../../src/publishers/nats.js'
import {RedisPublisher} from '../../src/publishers/redis.js'
import {StdoutPublisher} from '../../src/publishers/stdout.js'
import {broker, uniqueName} from '../helpers/brokers.js'
import {eventually, expected, samples, schemaErrors} from './helpers.js'

const schema = JSON.parse(readFileSync(new URL('../../schemas/envelope.schema.json', import.meta.url), 'utf8'))
const events = samples('c0')
const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

const amqp = await broker('amqp')
describe.skipIf(!amqp.available)('amqp: publisher -> plain amqplib -> decodeAmqp', () => {
  it('carries every field; the headers match the schema\'s metadata', async () => {
    const client = (await import('amqplib')).default
    const exchange = uniqueName('consume_contract')
    const connection = await client.connect(amqp.url)
    cleanups.push(() => connection.close())
    const channel = await connection.createChannel()
    await channel.assertExchange(exchange, 'topic', {durable: true})
    cleanups.push(() => channel.deleteExchange(exchange))
    const {queue} = await channel.assertQueue('', {exclusive: true})
    await channel.bindQueue(queue, exchange, '#')
    const publisher = new AmqpPublisher({target: amqp.url, exchange, timeoutMs: 3000})
    expect(await publisher.publish(events)).toEqual(events.map(() => ({ok: true})))
    await publisher.close()
    for (const event of events) {
      const message = await eventually(() => channel.get(queue, {noAck: true}), 'a message')
      // what a plain client sees without our decode
      expect(message.content.toString('utf8')).toBe(event.payload)
      expect(message.properties.messageId).toBe(event.id)
      expect(message.fields.routingKey).toBe(event.eventType)
      expect(schemaErrors(message.properties.headers, schema.$defs.metadata, schema)).toEqual([])
      expect(decodeAmqp(message)).toEqual(expected(event))
    }
  })
})

const nats = await broker('nats')
describe.skipIf(!nats.available)('nats: publisher -> plain nats.js consumer -> decodeNats', () => {
  it('carries every field, Nats-Msg-Id is the event id', async () => {
    const client = await import('nats')
    const stream = uniqueName('CONSUME_CONTRACT')
    const prefix = `${stream.toLowerCase()}.`
    const nc = await client.connect({servers: nats.url})
    cleanups.push(() => nc.close())
    const jsm = await nc.jetstreamManager()
    cleanups.push(() => jsm.streams.delete(stream))
    const publisher = new NatsPublisher({target: nats.url, subjectPrefix: prefix, stream, timeoutMs: 3000})
    expect(await publisher.publish(events)).toEqual(events.map(() => ({ok: true})))
    await publisher.close()
    const consumer = await nc.jetstream().consumers.get(stream) // an ordered consumer: the plain client's simplest read
    for (const event of events) {
      const message = (await consumer.next({expires: 3000}))!
      expect(message.string()).toBe(event.payload)
      expect(message.subject).toBe(prefix + event.eventType)
      expect(message.headers!.get('Nats-Msg-Id')).toBe(event.id)
      expect(decodeNats(message)).toEqual(expected(event))
    }
  })
})

const redis = await broker('redis')
describe.skipIf(!redis.available)('redis: publisher -> plain XRANGE -> decodeRedis', () => {
  it('carries every field', async () => {
    const {createClient} = await import('redis')
    const key = uniqueName('consume_contract')
    const client = createClient({url: redis.url})
    await client.connect()
    cleanups.push(() => client.close())
    cleanups.push(() => client.del(key))
    const publisher = new RedisPublisher({target: redis.url, stream: key, timeoutMs: 3000})
    expect(await publisher.publish(events)).toEqual(events.map(() => ({ok: true})))
    await publisher.close()
    const entries = await client.xRange(key, '-', '+')
    expect(entries.map((e) => e.message.id)).toEqual(events.map((e) => e.id))
    for (const [i, entry] of entries.entries()) {
      const fields = entry.message as Record<string, string>
      expect(fields.payload).toBe(events[i].payload)
      expect(decodeRedis(fields)).toEqual(expected(events[i]))
    }
  })
})

describe('http: publisher -> node:http -> decodeCloudEvent', () => {
  for (const mode of ['structured', 'binary'] as const) {
    it(`${mode} mode carries every field`, async () => {
      const received: {headers: IncomingHttpHeaders; body: Buffer}[] = []
      const server = createServer((req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c) => chunks.push(c))
        req.on('end', () => {
          received.push({headers: req.headers, body: Buffer.concat(chunks)})
          res.writeHead(204).end()
        })
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      try {
        const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`
        const publisher = new HttpPublisher({target, mode})
        expect(await publisher.publish(events)).toEqual(events.map(() => ({ok: true})))
        expect(received).toHaveLength(events.length)
        const byId = new Map(received.map((r) => [decodeCloudEvent(r).id, r]))
        for (const event of events) expect(decodeCloudEvent(byId.get(event.id)!)).toEqual(expected(event))
        // a framework that parsed a JSON object body already (express.json()) gives the same event
        const parsed = received
          .map((r) => ({headers: r.headers, body: JSON.parse(r.body.toString('utf8'))}))
          .filter((r) => r.body !== null && typeof r.body === 'object')
        expect(parsed.length).toBeGreaterThanOrEqual(2)
        for (const r of parsed) expect(decodeCloudEvent(r)).toEqual(expected(events.find((e) => e.id === decodeCloudEvent(r).id)!))
      } finally {
        await new Promise((resolve) => server.close(resolve))
      }
    })
  }

  it('a header whose name is no CloudEvents extension name does not travel', async () => {
    const received: {headers: IncomingHttpHeaders; body: Buffer}[] = []
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c) => chunks.push(c)).on('end', () => (received.push({headers: req.headers, body: Buffer.concat(chunks)}), res.writeHead(200).end()))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    await new HttpPublisher({target}).publish([{...events[0], headers: '{"X-Request-Id":"r1","tenant":"acme"}'}])
    await new Promise((resolve) => server.close(resolve))
    expect(decodeCloudEvent(received[0]).headers).toEqual({tenant: 'acme'})
  })
})

describe('stdout: publisher -> JSON lines -> decodeEnvelope, valid against schemas/envelope.schema.json', () => {
  it('every line matches the schema and decodes back', async () => {
    const stream = new PassThrough()
    let text = ''
    stream.on('data', (chunk) => (text += chunk))
    await new StdoutPublisher({stream}).publish(events)
    const lines = text.trimEnd().split('\n')
    expect(lines).toHaveLength(events.length)
    for (const [i, line] of lines.entries()) {
      expect(schemaErrors(JSON.parse(line), schema)).toEqual([])
      expect(decodeEnvelope(line)).toEqual(expected(events[i]))
    }
  })

  it('the schema refuses what the contract forbids (so the check above can fail)', () => {
    const good = JSON.parse(lineOf(events[0]))
    expect(schemaErrors({...good, id: ''}, schema)).not.toEqual([])
    expect(schemaErrors({...good, aggregate_version: 1.5}, schema)).not.toEqual([])
    expect(schemaErrors({...good, created_at: 'yesterday'}, schema)).not.toEqual([])
    expect(schemaErrors({...good, headers: {'outbox-event-id': 'x'}}, schema)).not.toEqual([])
    expect(schemaErrors({...good, extra: 1}, schema)).not.toEqual([])
    const {payload: _, ...noPayload} = good
    expect(schemaErrors(noPayload, schema)).not.toEqual([])
  })
})

function lineOf(event: (typeof events)[number]): string {
  const stream = new PassThrough()
  void new StdoutPublisher({stream}).publish([event])
  return String(stream.read()).trimEnd()
}
