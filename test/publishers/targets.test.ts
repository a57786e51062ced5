// `target` is where every publisher sends, as `outbox relay --target`: a real publish through
// createPublisher to each real broker (and an HTTP receiver) lands there, and a target where
// nothing listens fails instead of falling back to the client's localhost default (amqplib
// connected to amqp://localhost when given `target` before, which is where these brokers run).
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {createPublisher} from '../../src/publishers/index.js'
import type {Publisher} from '../../src/publishers/types.js'
import type {ClaimedEvent} from '../../src/relay/claim.js'
import {broker, uniqueName, viaPort, type Broker, type BrokerName} from '../helpers/brokers.js'
import {sample, until} from '../helpers/publishers.js'
import {TcpProxy} from '../helpers/proxy.js'

/** A loopback port nothing listens on (bound, then closed). */
async function deadPort(): Promise<number> {
  const proxy = new TcpProxy('127.0.0.1', 1)
  await proxy.up()
  const port = proxy.port
  await proxy.down()
  return port
}

/** Per broker: the publisher's options besides target, and the ids the broker holds there. */
interface Destination {
  options: Record<string, unknown>
  held(): Promise<string[]>
  cleanup(): Promise<void>
}

const DESTINATIONS: Record<BrokerName, (b: Broker) => Promise<Destination>> = {
  async amqp(b) {
    const amqp = (await import('amqplib')).default
    const exchange = uniqueName('outbox_target')
    const conn = await amqp.connect(b.url)
    const ch = await conn.createChannel()
    await ch.assertExchange(exchange, 'topic', {durable: false, autoDelete: false})
    const {queue} = await ch.assertQueue('', {exclusive: true})
    await ch.bindQueue(queue, exchange, '#')
    const got: string[] = []
    await ch.consume(queue, (m) => m && got.push(m.properties.messageId), {noAck: true})
    return {
      options: {exchange, assertExchange: false},
      held: async () => got,
      cleanup: async () => {
        await ch.deleteExchange(exchange)
        await conn.close()
      },
    }
  },
  async nats(b) {
    const nats = await import('nats')
    const stream = uniqueName('OUTBOX_TARGET')
    const prefix = `${stream.toLowerCase()}.`
    const nc = await nats.connect({servers: b.url})
    const jsm = await nc.jetstreamManager()
    await jsm.streams.add({name: stream, subjects: [`${prefix}>`], storage: nats.StorageType.Memory})
    return {
      options: {subjectPrefix: prefix},
      held: async () => {
        const info = await jsm.streams.info(stream)
        const ids: string[] = []
        for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) ids.push((await jsm.streams.getMessage(stream, {seq})).header.get('Nats-Msg-Id'))
        return ids
      },
      cleanup: async () => {
        await jsm.streams.delete(stream).catch(() => {})
        await nc.close()
      },
    }
  },
  async redis(b) {
    const {createClient} = await import('redis')
    const key = uniqueName('outbox_target')
    const client = createClient({url: b.url})
    await client.connect()
    return {
      options: {stream: key},
      held: async () => (await client.xRange(key, '-', '+')).map((e) => e.message.id),
      cleanup: async () => {
        await client.del(key)
        await client.close()
      },
    }
  },
}

async function published(publisher: Publisher, events: ClaimedEvent[]) {
  try {
    return await publisher.publish(events)
  } finally {
    await publisher.close()
  }
}

for (const name of ['amqp', 'nats', 'redis'] as const) {
  const b = await broker(name)
  describe.skipIf(!b.available)(`${name}: createPublisher('${name}', {target})`, () => {
    let d: Destination
    beforeAll(async () => {
      d = await DESTINATIONS[name](b)
    })
    afterAll(async () => {
      await d?.cleanup()
    })

    it('publishes to the broker at target', async () => {
      const events = [sample(1), sample(2)]
      expect(await published(await createPublisher(name, {target: b.url, ...d.options}), events)).toEqual([{ok: true}, {ok: true}])
      await until(async () => (await d.held()).length >= 2, 5000, `${name} to hold 2 messages`)
      expect((await d.held()).sort()).toEqual(events.map((e) => e.id).sort())
    })

    it('a target where nothing listens fails every event, and the local broker gets nothing', async () => {
      const target = viaPort(b.url, await deadPort())
      const results = await published(await createPublisher(name, {target, ...d.options, timeoutMs: 1000}), [sample(3), sample(4)])
      for (const r of results) expect(r).toMatchObject({ok: false, unreachable: true})
      // had it gone to the client's default (this very broker, on localhost), it would hold them
      expect(await d.held()).not.toContain(sample(3).id)
    })

    it('url, the deprecated name of target, still publishes there', async () => {
      expect(await published(await createPublisher(name, {url: b.url, ...d.options}), [sample(5)])).toEqual([{ok: true}])
      await until(async () => (await d.held()).includes(sample(5).id), 5000, `${name} to hold the url-published message`)
    })
  })
}

describe("http: createPublisher('http', {target})", () => {
  it('POSTs to the receiver at target; a target where nothing listens fails every event', async () => {
    const got: {path?: string; id: string | string[] | undefined}[] = []
    const receiver = createServer((req, res) => {
      got.push({path: req.url, id: req.headers['idempotency-key']})
      req.resume().on('end', () => res.writeHead(204).end())
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    try {
      const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/ingest`
      expect(await published(await createPublisher('http', {target}), [sample(6)])).toEqual([{ok: true}])
      expect(got).toEqual([{path: '/ingest', id: sample(6).id}])

      const down = await published(await createPublisher('http', {target: `http://127.0.0.1:${await deadPort()}/ingest`, timeoutMs: 2000}), [sample(7)])
      expect(down).toEqual([{ok: false, error: expect.stringContaining('ECONNREFUSED'), unreachable: true}])
      expect(got).toHaveLength(1)
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()))
    }
  })
})
