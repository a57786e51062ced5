// The amqp, nats and redis publishers behind chaos's fault proxy (src/chaos/proxy/): a broker
// that refuses connections fails a publish at once (not hidden by reconnecting until the outage
// is over), and one that black-holes a connection mid-run (no answer, no reset) fails each
// publish within its timeout, lets go of that connection, and publishes again once it answers;
// close() never waits on it. And the proxy's delay-acks (slow-ack's fault on a real broker):
// it finds each broker's publish acks in its protocol and holds back those alone.
import {afterAll, describe, expect, it} from 'vitest'
import {proxyForUrl, type FaultProxy} from '../../src/chaos/proxy/fault-proxy.js'
import {AmqpPublisher} from '../../src/publishers/amqp.js'
import {NatsPublisher} from '../../src/publishers/nats.js'
import {RedisPublisher} from '../../src/publishers/redis.js'
import type {Publisher, PublishResult} from '../../src/publishers/types.js'
import {broker, uniqueName, type BrokerName} from '../helpers/brokers.js'
import {sample, sleep} from '../helpers/publishers.js'

const TIMEOUT_MS = 1000
const name = uniqueName('outbox_faults')

const PUBLISHERS: Record<BrokerName, (url: string) => Publisher> = {
  // no queue bound: mandatory off, so that the broker's confirm alone says ok
  amqp: (url) => new AmqpPublisher({target: url, exchange: name, mandatory: false, timeoutMs: TIMEOUT_MS}),
  nats: (url) => new NatsPublisher({target: url.replace(/^nats:\/\//, ''), stream: name.toUpperCase(), subjectPrefix: `${name}.`, timeoutMs: TIMEOUT_MS}),
  redis: (url) => new RedisPublisher({target: url, stream: name, timeoutMs: TIMEOUT_MS}),
}

/** The publish's results, or 'hung' when it outlasts its timeout by far. */
async function publishOrHang(publisher: Publisher, n: number): Promise<PublishResult[] | 'hung'> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 4 * TIMEOUT_MS)))
  return Promise.race([publisher.publish([sample(n), sample(n + 1)]), hung]).finally(() => clearTimeout(timer))
}

const okAll = (results: PublishResult[] | 'hung') => results !== 'hung' && results.every((r) => r.ok)

/** Whether one of a few publishes (two events each, from n on) went through: a loaded machine may miss a first connect. */
async function publishes(publisher: Publisher, from: number): Promise<boolean> {
  for (let n = from; n < from + 10; n += 2) {
    if (okAll(await publishOrHang(publisher, n))) return true
    await sleep(100)
  }
  return false
}

for (const kind of ['amqp', 'nats', 'redis'] as const) {
  const b = await broker(kind)
  describe.skipIf(!b.available)(`${kind} publisher behind the fault proxy`, () => {
    const proxies: FaultProxy[] = []
    afterAll(async () => {
      await Promise.all(proxies.map((p) => p.stop()))
      await cleanup(kind, b.url)
    })

    it('delay-acks holds back the publish acks alone: a publish whose ack comes past its timeout fails, a shorter delay passes', {timeout: 30_000}, async () => {
      const {proxy, url} = await proxyForUrl(b.url, kind)
      proxies.push(proxy)
      const publisher = PUBLISHERS[kind](url)
      // connected and published with every ack held back a little (a loaded machine may miss a first connect)
      proxy.setMode({kind: 'delay-acks', ms: TIMEOUT_MS / 5})
      expect(await publishes(publisher, 70)).toBe(true)
      const held = proxy.stats.delayedAcks
      expect(held).toBeGreaterThan(0)
      // on the open connection, the ack comes after the publish's timeout
      proxy.setMode({kind: 'delay-acks', ms: 2 * TIMEOUT_MS})
      const late = await publishOrHang(publisher, 80)
      expect(late).not.toBe('hung')
      for (const r of late as PublishResult[]) expect(r).toMatchObject({ok: false, error: expect.not.stringContaining('connect')})
      await sleep(2 * TIMEOUT_MS)
      expect(proxy.stats.delayedAcks).toBeGreaterThan(held)
      proxy.setMode({kind: 'delay-acks', ms: TIMEOUT_MS / 5})
      expect(await publishes(publisher, 82)).toBe(true)
      if (kind === 'nats') {
        // the same id again: JetStream drops it and says so in its ack
        expect(await publisher.publish([sample(95)])).toEqual([{ok: true}])
        expect(await publisher.publish([sample(95)])).toEqual([{ok: true}])
        expect(proxy.stats.duplicateAcks).toBe(1)
      }
      await publisher.close()
    })

    it('refused: a publish begun in the outage fails, even when the broker is back before its timeout', {timeout: 30_000}, async () => {
      const {proxy, url} = await proxyForUrl(b.url)
      proxies.push(proxy)
      proxy.setMode({kind: 'refuse'})
      const publisher = PUBLISHERS[kind](url)
      const publishing = publishOrHang(publisher, 1)
      // back as soon as the publisher was refused once: well within its timeout
      const back = setInterval(() => proxy.stats.refused > 0 && proxy.setMode({kind: 'pass'}), 5)
      const results = await publishing
      clearInterval(back)
      proxy.setMode({kind: 'pass'})
      expect(proxy.stats.refused).toBeGreaterThan(0)
      expect(results).not.toBe('hung')
      for (const r of results as PublishResult[]) expect(r).toMatchObject({ok: false, unreachable: true})
      expect(await publishes(publisher, 3)).toBe(true)
      await publisher.close()
    })

    it('black-holed mid-run: each publish fails within its timeout, the next connection publishes, close() returns', {timeout: 30_000}, async () => {
      const {proxy, url} = await proxyForUrl(b.url)
      proxies.push(proxy)
      const publisher = PUBLISHERS[kind](url)
      expect(await publishes(publisher, 30)).toBe(true)
      proxy.setMode({kind: 'blackhole'})
      for (const n of [12, 14]) {
        const results = await publishOrHang(publisher, n)
        expect(results).not.toBe('hung')
        for (const r of results as PublishResult[]) expect(r.ok).toBe(false)
      }
      expect(proxy.stats.swallowed).toBeGreaterThan(0)
      proxy.setMode({kind: 'pass'})
      expect(await publishes(publisher, 20)).toBe(true)

      // closing while the connection hangs: not longer than a publish
      await publishOrHang(publisher, 40)
      proxy.setMode({kind: 'blackhole'})
      void publisher.publish([sample(42)])
      await sleep(50)
      let timer: NodeJS.Timeout | undefined
      const closed = await Promise.race([publisher.close().then(() => 'closed'), new Promise((r) => (timer = setTimeout(() => r('hung'), 4 * TIMEOUT_MS)))])
      clearTimeout(timer)
      expect(closed).toBe('closed')
    })
  })
}

async function cleanup(kind: BrokerName, url: string): Promise<void> {
  if (kind === 'amqp') {
    const amqp = (await import('amqplib')).default
    const conn = await amqp.connect(url)
    const ch = await conn.createChannel()
    await ch.deleteExchange(name)
    await conn.close()
  } else if (kind === 'nats') {
    const nats = await import('nats')
    const nc = await nats.connect({servers: url})
    await (await nc.jetstreamManager()).streams.delete(name.toUpperCase()).catch(() => false)
    await nc.close()
  } else {
    const {createClient} = await import('redis')
    const client = createClient({url})
    await client.connect()
    await client.del(name)
    await client.close()
  }
}
