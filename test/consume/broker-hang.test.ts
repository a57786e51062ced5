// The consumer runtimes' broker sources behind chaos's fault proxy, black-holed mid-run (no
// answer, no reset): none waits on the silent connection for ever. Redis and NATS drop it
// within about their timeout, connect again and deliver what came meanwhile; RabbitMQ's
// heartbeats (at half the timeout, both ends) find it lost and the source fails with a ConnectionError
// (the consumer exits for its supervisor, as on any lost connection), not after 2 minutes.
import {afterAll, describe, expect, it} from 'vitest'
import {proxyForUrl, type FaultProxy} from '../../src/chaos/proxy/fault-proxy.js'
import {openAmqpSource} from '../../src/consume/amqp.js'
import type {Delivery, DeliverySource} from '../../src/consume/loop.js'
import {openNatsSource} from '../../src/consume/nats.js'
import {openRedisSource} from '../../src/consume/redis.js'
import {createPublisher} from '../../src/publishers/index.js'
import type {Publisher} from '../../src/publishers/types.js'
import {broker, uniqueName} from '../helpers/brokers.js'
import {sample, sleep} from '../helpers/publishers.js'

const TIMEOUT_MS = 1500
const name = uniqueName('consume_hang')
const proxies: FaultProxy[] = []
const open: {source: DeliverySource; publisher: Publisher}[] = []
afterAll(async () => {
  for (const {source, publisher} of open) {
    await source.stop().catch(() => {})
    await source.close().catch(() => {})
    await publisher.close()
  }
  await Promise.all(proxies.map((p) => p.stop()))
})

/** What the promise came to, or 'hung' after ms. */
async function settle<T>(promise: Promise<T>, ms: number): Promise<{value: T} | {error: unknown} | 'hung'> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), ms)))
  const settled = promise.then(
    (value) => ({value}),
    (error: unknown) => ({error}),
  )
  return Promise.race([settled, hung]).finally(() => clearTimeout(timer))
}

async function proxied(url: string): Promise<{proxy: FaultProxy; url: string}> {
  const via = await proxyForUrl(url)
  proxies.push(via.proxy)
  return via
}

const idOf = (d: Delivery | null) => (d && 'id' in d.event ? d.event.id : undefined)

/** One delivery taken and acked, then the black hole: the source must give up on it by itself. */
async function blackHoleMidRun(source: DeliverySource, publisher: Publisher, proxy: FaultProxy) {
  open.push({source, publisher})
  expect(await publisher.publish([sample(1)])).toEqual([{ok: true}])
  const first = await settle(source.next(), 10_000)
  expect(first !== 'hung' && 'value' in first && idOf(first.value)).toBe(sample(1).id)
  await (first as {value: Delivery}).value.ack()
  proxy.setMode({kind: 'blackhole'})
  await sleep(300)
  expect(await publisher.publish([sample(2)])).toEqual([{ok: true}])
  const next = settle(source.next(), 3 * TIMEOUT_MS + 10_000)
  await sleep(3 * TIMEOUT_MS)
  proxy.setMode({kind: 'pass'})
  return next
}

const redis = await broker('redis')
describe.skipIf(!redis.available)('the Redis source black-holed mid-run', () => {
  it('drops the silent connection, connects again and delivers what came meanwhile', {timeout: 60_000}, async () => {
    const {proxy, url} = await proxied(redis.url)
    const source = await openRedisSource({url, stream: name, blockMs: 200, timeoutMs: TIMEOUT_MS, claimIdleMs: 30_000}, 'hang-group', 1)
    const publisher = await createPublisher('redis', {target: redis.url, stream: name})
    const second = await blackHoleMidRun(source, publisher, proxy)
    expect(second !== 'hung' && 'value' in second && idOf(second.value)).toBe(sample(2).id)
    expect(proxy.stats.swallowed).toBeGreaterThan(0)
    const {createClient} = await import('redis')
    const client = createClient({url: redis.url})
    await client.connect()
    await client.del(name)
    await client.close()
  })
})

const nats = await broker('nats')
describe.skipIf(!nats.available)('the NATS source black-holed mid-run', () => {
  it('finds the connection stale, connects again and delivers what came meanwhile', {timeout: 60_000}, async () => {
    const stream = name.toUpperCase()
    const publisher = await createPublisher('nats', {target: nats.url.replace(/^nats:\/\//, ''), stream, subjectPrefix: `${name}.`})
    expect(await publisher.publish([sample(0)])).toEqual([{ok: true}]) // creates the stream
    const {proxy, url} = await proxied(nats.url)
    const source = await openNatsSource({url, stream, durable: 'hang', timeoutMs: TIMEOUT_MS, ackWaitMs: 30_000}, 1, 5)
    ;(await source.next())?.ack()
    const second = await blackHoleMidRun(source, publisher, proxy)
    expect(second !== 'hung' && 'value' in second && idOf(second.value)).toBe(sample(2).id)
    const {connect} = await import('nats')
    const nc = await connect({servers: nats.url})
    await (await nc.jetstreamManager()).streams.delete(stream).catch(() => false)
    await nc.close()
  })
})

const amqp = await broker('amqp')
describe.skipIf(!amqp.available)('the RabbitMQ source black-holed mid-run', () => {
  it('misses the heartbeats and fails with a lost connection, within about its timeout', {timeout: 60_000}, async () => {
    const {proxy, url} = await proxied(amqp.url)
    const source = await openAmqpSource({url, queue: name, exchange: name, timeoutMs: 2 * TIMEOUT_MS}, 'hang', 1)
    const publisher = await createPublisher('amqp', {target: amqp.url, exchange: name})
    const outcome = await blackHoleMidRun(source, publisher, proxy)
    expect(outcome !== 'hung' && 'error' in outcome && String(outcome.error)).toMatch(/lost the RabbitMQ connection/)
    const lib = (await import('amqplib')).default
    const conn = await lib.connect(amqp.url)
    const ch = await conn.createChannel()
    for (const q of [name, `${name}.dead-letter`]) await ch.deleteQueue(q)
    for (const x of [name, `${name}.dead-letter`]) await ch.deleteExchange(x)
    await conn.close()
  })
})
