// The amqp, nats and redis publishers against the real local brokers, alone and behind the
// relay, including "broker down, then back" through a loopback TCP proxy: nothing is lost,
// and nothing is marked published that the broker did not acknowledge.
import {spawnSync} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {applyInit} from '../../src/schema/init.js'
import {AmqpPublisher} from '../../src/publishers/amqp.js'
import {NatsPublisher} from '../../src/publishers/nats.js'
import {RedisPublisher} from '../../src/publishers/redis.js'
import type {Publisher} from '../../src/publishers/types.js'
import {Relay} from '../../src/relay/relay.js'
import {broker, uniqueName, viaPort, type Broker} from '../helpers/brokers.js'
import {count, seedEvents} from '../helpers/events.js'
import {sample, sleep, until} from '../helpers/publishers.js'
import {TcpProxy} from '../helpers/proxy.js'
import {sqliteUrl, uniqueTables} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

/** What a test needs from each broker: a publisher (at a URL) and what the broker holds. */
interface Harness {
  publisher(url: string): Publisher
  /** `outbox relay` flags that publish to the same place */
  cliFlags: string[]
  /** event ids the broker holds (or delivered), duplicates included */
  received(): Promise<string[]>
  cleanup(): Promise<void>
}

async function amqpHarness(b: Broker): Promise<Harness> {
  const amqp = (await import('amqplib')).default
  const exchange = uniqueName('outbox_test')
  const conn = await amqp.connect(b.url)
  const ch = await conn.createChannel()
  await ch.assertExchange(exchange, 'topic', {durable: true})
  const {queue} = await ch.assertQueue('', {exclusive: true})
  await ch.bindQueue(queue, exchange, '#')
  const got: {id: string; key: string; persistent: boolean; type?: string; body: string}[] = []
  await ch.consume(queue, (m) => {
    if (m) got.push({id: m.properties.messageId, key: m.fields.routingKey, persistent: m.properties.deliveryMode === 2, type: m.properties.type, body: m.content.toString()})
  }, {noAck: true})
  return {
    publisher: (url) => new AmqpPublisher({target: url, exchange, timeoutMs: 3000}),
    cliFlags: ['--exchange', exchange],
    received: async () => {
      for (const m of got) {
        expect(m.persistent).toBe(true)
        expect(m.key).toBe(m.type)
      }
      return got.map((m) => m.id)
    },
    cleanup: async () => {
      await ch.deleteExchange(exchange)
      await conn.close()
    },
  }
}

async function natsHarness(b: Broker): Promise<Harness> {
  const nats = await import('nats')
  const stream = uniqueName('OUTBOX_TEST')
  const prefix = `${stream.toLowerCase()}.`
  const nc = await nats.connect({servers: b.url})
  const jsm = await nc.jetstreamManager()
  return {
    publisher: (url) => new NatsPublisher({target: url, subjectPrefix: prefix, stream, timeoutMs: 1500}),
    cliFlags: ['--subject-prefix', prefix, '--stream', stream],
    received: async () => {
      const info = await jsm.streams.info(stream)
      const ids: string[] = []
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const m = await jsm.streams.getMessage(stream, {seq})
        expect(m.subject.startsWith(prefix)).toBe(true)
        ids.push(m.header.get('Nats-Msg-Id'))
      }
      return ids
    },
    cleanup: async () => {
      await jsm.streams.delete(stream).catch(() => {})
      await nc.close()
    },
  }
}

async function redisHarness(b: Broker): Promise<Harness> {
  const {createClient} = await import('redis')
  const key = uniqueName('outbox_test')
  const client = createClient({url: b.url})
  await client.connect()
  return {
    publisher: (url) => new RedisPublisher({target: url, stream: key, timeoutMs: 1500}),
    cliFlags: ['--stream', key],
    received: async () => {
      const entries = await client.xRange(key, '-', '+')
      for (const e of entries) expect(JSON.parse(e.message.payload)).toHaveProperty('n')
      return entries.map((e) => e.message.id)
    },
    cleanup: async () => {
      await client.del(key)
      await client.close()
    },
  }
}

const HARNESSES = {amqp: amqpHarness, nats: natsHarness, redis: redisHarness}


for (const name of ['amqp', 'nats', 'redis'] as const) {
  const b = await broker(name)
  describe.skipIf(!b.available)(`${name} publisher`, () => {
    let h: Harness
    let db: Db
    let names: TableNames
    beforeAll(async () => {
      h = await HARNESSES[name](b)
      ;({db, names} = await openTables(sqliteUrl(), `br${name.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(async () => {
      await h?.cleanup()
      await closeTables(db, names)
    })

    it('publishes each event with its id, acknowledged by the broker', async () => {
      const publisher = h.publisher(b.url)
      const events = [1, 2, 3].map(sample)
      expect(await publisher.publish(events)).toEqual([{ok: true}, {ok: true}, {ok: true}])
      await publisher.close()
      await until(async () => (await h.received()).length >= 3, 5000, `${name} to hold 3 messages`)
      expect((await h.received()).sort()).toEqual(events.map((e) => e.id).sort())
    })

    it('broker down, then back: nothing lost, nothing marked that was not acknowledged', async () => {
      const before = new Set(await h.received())
      const proxy = new TcpProxy(b.host, b.port)
      await proxy.up()
      const publisher = h.publisher(viaPort(b.url, proxy.port))
      // an outage must not use up attempts (the broker took none of the batch: attempts stay 0);
      // three, for the partly failed batches of a client still reconnecting afterwards
      const relay = new Relay({db, tables: names, publisher, batch: 10, maxAttempts: 3, backoff: {baseMs: 300, capMs: 300}})
      const first = await seedEvents(db, names, {count: 10})
      expect((await relay.drainOnce()).published).toBe(10)

      await proxy.down()
      const second = await seedEvents(db, names, {count: 10, base: new Date()})
      const down = await relay.drainOnce()
      expect(down.published).toBe(0)
      expect(down.retried).toBe(10)
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(10)
      expect(await count(db, names, 'published_at IS NULL AND failed_at IS NULL AND attempts = 0 AND last_error IS NOT NULL')).toBe(10)
      const whileDown = new Set(await h.received())
      for (const id of second) expect(whileDown.has(id)).toBe(false)

      await proxy.up()
      for (let i = 0; i < 60 && (await count(db, names, 'published_at IS NULL')) > 0; i++) {
        await relay.drainOnce()
        await sleep(100)
      }
      await publisher.close()
      await proxy.down()
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
      await until(async () => {
        const held = new Set(await h.received())
        return [...first, ...second].every((id) => held.has(id))
      }, 5000, `${name} to hold every event`)
      const held = (await h.received()).filter((id) => !before.has(id))
      // at least once everywhere; JetStream's duplicate window makes it exactly once
      if (name === 'nats') expect(held.length).toBe(20)
    })

    it(`outbox relay --publisher ${name} --once delivers to the broker`, async () => {
      const cliDb = sqliteUrl()
      const cli = await openDb(cliDb)
      const cliNames = uniqueTables(`bc${name.slice(0, 2)}`)
      await applyInit(cli, cliNames, {inbox: false, archive: false})
      const ids = await seedEvents(cli, cliNames, {count: 5})
      const bin = new URL('../../bin/run.js', import.meta.url).pathname
      const run = spawnSync(process.execPath, [bin, 'relay', '--url', cliDb, '--table', cliNames.outbox, '--publisher', name, '--target', b.url, ...h.cliFlags, '--once'], {encoding: 'utf8'})
      expect(run.status, run.stderr).toBe(0)
      expect(await count(cli, cliNames, 'published_at IS NULL')).toBe(0)
      await cli.close()
      await until(async () => {
        const held = new Set(await h.received())
        return ids.every((id) => held.has(id))
      }, 5000, `${name} to hold the CLI's events`)
    })

    if (name === 'nats') {
      it('a resend with the same id is dropped by the stream (Nats-Msg-Id)', async () => {
        const publisher = h.publisher(b.url)
        const before = (await h.received()).length
        expect(await publisher.publish([sample(50)])).toEqual([{ok: true}])
        expect(await publisher.publish([sample(50)])).toEqual([{ok: true}])
        await publisher.close()
        expect((await h.received()).length).toBe(before + 1)
      })
    }

    if (name === 'amqp') {
      it('an unroutable message (no queue bound) is retryable, not silently acknowledged', async () => {
        const exchange = uniqueName('outbox_unbound')
        const publisher = new AmqpPublisher({target: b.url, exchange})
        const [result] = await publisher.publish([sample(60)])
        expect(result).toMatchObject({ok: false, error: expect.stringContaining('unroutable')})
        const amqp = (await import('amqplib')).default
        const conn = await amqp.connect(b.url)
        const ch = await conn.createChannel()
        await ch.deleteExchange(exchange)
        await conn.close()
        await publisher.close()
      })
    }

    it('a broker that is not there: every event is retryable and the error names no password', async () => {
      const proxy = new TcpProxy(b.host, b.port)
      await proxy.up()
      const port = proxy.port
      await proxy.down()
      const u = new URL(viaPort(b.url, port))
      u.username = 'user'
      u.password = 's3cret-pw'
      const publisher = h.publisher(u.toString())
      const results = await publisher.publish([sample(70), sample(71)])
      await publisher.close()
      for (const r of results) {
        expect(r.ok).toBe(false)
        if (!r.ok) {
          expect(r.permanent).toBeUndefined()
          expect(r.error).not.toContain('s3cret-pw')
        }
      }
    })
  })
}
