// The loopback broker against the relay's real http publisher and plain fetch: it keeps what
// it accepted, redelivers what was not acknowledged, and stages outages and poison messages.
// Then the consumer side: its delivery adapter under the shipped consumer runtime.
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterEach, describe, expect, it} from 'vitest'
import {sql} from '../../dialects/index.js'
import {LoopbackBroker} from '../../src/chaos/broker.js'
import {loopbackSource} from '../../src/chaos/workers/loopback-source.js'
import type {ConsumedEvent} from '../../src/consume/event.js'
import {runOn} from '../../src/consume/runtime.js'
import {openDb} from '../../src/db/index.js'
import {applyInit} from '../../src/schema/init.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import type {ClaimedEvent} from '../../src/relay/claim.js'
import {uuidv7} from '../../src/core/uuid.js'

const event = (n: number, version = 1): ClaimedEvent => ({
  id: uuidv7(),
  eventType: 'order.created',
  aggregateType: 'order',
  aggregateId: `order-${n}`,
  aggregateVersion: version,
  payload: JSON.stringify({n}),
  headers: null,
  createdAt: new Date(),
  attempts: 1,
})

let broker: LoopbackBroker | undefined
afterEach(async () => {
  await broker?.stop()
  broker = undefined
})

async function next(url: string): Promise<{tag: number; deliveries: number; event: {id: string; subject: string; aggregateversion: number; data: unknown}} | null> {
  const r = await fetch(`${url}/next?wait=200`)
  if (r.status === 204) return null
  return (await r.json()) as never
}

describe('loopback broker', () => {
  it('accepts the http publisher\'s CloudEvents and redelivers until acknowledged', async () => {
    broker = new LoopbackBroker({redeliverMs: 60_000})
    const url = await broker.start()
    const publisher = new HttpPublisher({target: `${url}/publish`})
    const events = [event(1), event(2)]
    expect(await publisher.publish(events)).toEqual([{ok: true}, {ok: true}])
    const first = (await next(url))!
    expect(first.event).toMatchObject({id: events[0].id, subject: 'order-1', aggregateversion: 1, data: {n: 1}})
    const second = (await next(url))!
    expect(second.event.id).toBe(events[1].id)
    expect(await next(url)).toBeNull()
    await fetch(`${url}/ack?tag=${second.tag}`, {method: 'POST'})
    expect(broker.idle()).toBe(false)
    broker.requeueUnacked() // the consumer holding the first one died
    const again = (await next(url))!
    expect(again).toMatchObject({tag: first.tag, deliveries: 2})
    await fetch(`${url}/ack?tag=${again.tag}`, {method: 'POST'})
    expect(broker.idle()).toBe(true)
    expect(broker.stats).toMatchObject({accepted: 2, delivered: 3, acked: 2})
    await publisher.close()
  })

  it('a resend of the same id is a second message (the consumer must dedupe)', async () => {
    broker = new LoopbackBroker()
    const url = await broker.start()
    const publisher = new HttpPublisher({target: `${url}/publish`})
    const e = event(1)
    await publisher.publish([e])
    await publisher.publish([e])
    expect(broker.acceptedById.get(e.id)).toBe(2)
    expect((await next(url))!.event.id).toBe(e.id)
    expect((await next(url))!.event.id).toBe(e.id)
    await publisher.close()
  })

  it('outage: refused while stopped, 503 (retryable) while unavailable, the same port after', async () => {
    broker = new LoopbackBroker()
    const url = await broker.start()
    const publisher = new HttpPublisher({target: `${url}/publish`, timeoutMs: 2000})
    await broker.stop()
    const [refused] = await publisher.publish([event(1)])
    expect(refused.ok).toBe(false)
    expect(refused.ok === false && refused.permanent).toBeFalsy()
    expect(await broker.start()).toBe(url)
    broker.setUnavailable(true)
    const [busy] = await publisher.publish([event(2)])
    expect(busy).toMatchObject({ok: false})
    expect(busy.ok === false && busy.error).toContain('503')
    expect(busy.ok === false && busy.permanent).toBeFalsy()
    broker.setUnavailable(false)
    expect(await publisher.publish([event(3)])).toEqual([{ok: true}])
    expect(broker.stats.accepted).toBe(1)
    await publisher.close()
  })

  it('poison: one id rejected every time, the others accepted; non-CloudEvents bodies refused permanently', async () => {
    broker = new LoopbackBroker()
    const url = await broker.start()
    const publisher = new HttpPublisher({target: `${url}/publish`})
    const poison = event(1)
    broker.reject(poison.id)
    const results = await publisher.publish([poison, event(2)])
    expect(results[0]).toMatchObject({ok: false})
    expect(results[1]).toEqual({ok: true})
    const bad = await fetch(`${url}/publish`, {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"id":"x"}'})
    expect(bad.status).toBe(400)
    await publisher.close()
  })

  it('hold and release in reverse: newer versions first (the out-of-order scenario)', async () => {
    broker = new LoopbackBroker()
    const url = await broker.start()
    const publisher = new HttpPublisher({target: `${url}/publish`})
    broker.hold()
    await publisher.publish([event(1, 1), event(1, 2)])
    expect(await next(url)).toBeNull()
    broker.release({reverse: true})
    broker.release({reverse: true}) // a second release changes nothing
    expect((await next(url))!.event.aggregateversion).toBe(2)
    expect((await next(url))!.event.aggregateversion).toBe(1)
    await publisher.close()
  })
})

describe('the loopback broker under the consumer runtime (loopbackSource + runOn)', () => {
  it('decodes the CloudEvents, acks only after the inbox commit, and takes a failed message back after the broker redelivers it', async () => {
    broker = new LoopbackBroker({redeliverMs: 300})
    const url = await broker.start()
    const dir = mkdtempSync(join(tmpdir(), 'outbox-loopback-'))
    const db = await openDb(`sqlite:${join(dir, 'inbox.db')}`)
    const publisher = new HttpPublisher({target: `${url}/publish`})
    try {
      const tables = {outbox: 'lb_outbox', inbox: 'lb_inbox'}
      await applyInit(db, tables, {inbox: true, archive: false})
      const events = [event(1), event(2)]
      await publisher.publish(events)
      const seen: ConsumedEvent[] = []
      let failOnce = true
      const idleWhileHandling: boolean[] = []
      const run = (maxEvents: number) =>
        runOn(() => Promise.resolve(loopbackSource(url)), {
          db,
          consumer: 'lb',
          tables,
          maxEvents,
          retryDelayMs: 0,
          handler: async (e) => {
            seen.push(e)
            idleWhileHandling.push(broker!.idle())
            if (e.id === events[0].id && failOnce) {
              failOnce = false
              throw new Error('handler failed once')
            }
          },
        })
      const summary = await run(2)
      expect(summary).toMatchObject({applied: 2, duplicate: 0, retried: 1, settled: 2})
      expect(seen.map((e) => e.id)).toEqual([events[0].id, events[1].id, events[0].id])
      expect(seen[0]).toMatchObject({eventType: 'order.created', aggregateType: 'order', aggregateId: 'order-1', aggregateVersion: 1, payload: {n: 1}})
      expect(seen[0].createdAt).toEqual(events[0].createdAt)
      expect(idleWhileHandling).toEqual([false, false, false]) // nothing is acked before its commit
      expect(broker.idle()).toBe(true)
      expect(broker.stats).toMatchObject({accepted: 2, delivered: 3, acked: 2})
      const [inbox] = await db.query<{n: unknown}>(sql`SELECT COUNT(*) AS n FROM lb_inbox`)
      expect(Number(inbox.n)).toBe(2)

      // a resend of an event already handled: a duplicate, acked without the handler
      await publisher.publish([events[1]])
      expect(await run(1)).toMatchObject({applied: 0, duplicate: 1, settled: 1})
      expect(seen).toHaveLength(3)
      expect(broker.idle()).toBe(true)
    } finally {
      await publisher.close()
      await db.close()
      rmSync(dir, {recursive: true, force: true})
    }
  })
})
