// The shared loop alone, over a scripted source and a scripted Consumer: what it settles, and
// how, for each outcome. No broker, no database.
import {describe, expect, it} from 'vitest'
import type {Consumer} from '../../src/consumer.js'
import {MessageDecodeError, type ConsumedEvent} from '../../src/consume/event.js'
import {runLoop, type Delivery, type DeliverySource} from '../../src/consume/loop.js'

type Settlement = 'ack' | `retry:${number}` | 'dead'

function event(id: string): ConsumedEvent {
  return {id, eventType: 't', aggregateType: null, aggregateId: 'a', aggregateVersion: null, payload: {}, headers: {}, createdAt: new Date(0)}
}

/** A source over a fixed list; records how each delivery was settled. */
function source(items: {event: Delivery['event']; attempt?: number}[]) {
  const settled: [string, Settlement][] = []
  const queue = [...items]
  let stopped = false
  let taken = 0
  const src: DeliverySource & {settled: typeof settled; taken: () => number} = {
    settled,
    taken: () => taken,
    async next() {
      const item = stopped ? undefined : queue.shift()
      if (!item) return null
      taken++
      const id = item.event instanceof MessageDecodeError ? 'foreign' : item.event.id
      return {
        event: item.event,
        attempt: item.attempt ?? 1,
        ack: async () => void settled.push([id, 'ack']),
        retry: async (_r, delayMs) => void settled.push([id, `retry:${delayMs}`]),
        deadLetter: async () => void settled.push([id, 'dead']),
      }
    },
    async stop() {
      stopped = true
    },
    async close() {},
  }
  return src
}

const consumer = (handle: (e: ConsumedEvent, effect: () => Promise<void>) => Promise<'applied' | 'duplicate' | 'stale'>) =>
  ({handle: (e: ConsumedEvent, effect: (tx: never) => Promise<void>) => handle(e, () => effect(undefined as never))}) as unknown as Consumer

describe('runLoop', () => {
  it('acks applied, duplicate and stale alike; dead-letters what is no event without running the handler', async () => {
    const outcomes: Record<string, 'applied' | 'duplicate' | 'stale'> = {a: 'applied', b: 'duplicate', c: 'stale'}
    const src = source([{event: event('a')}, {event: event('b')}, {event: new MessageDecodeError('no id')}, {event: event('c')}])
    let handled = 0
    const summary = await runLoop(src, {consumer: consumer(async (e, effect) => (await effect(), outcomes[e.id])), handler: async () => void handled++})
    expect(src.settled).toEqual([['a', 'ack'], ['b', 'ack'], ['foreign', 'dead'], ['c', 'ack']])
    expect(summary).toMatchObject({applied: 1, duplicate: 1, stale: 1, deadLettered: 1, settled: 4})
    expect(handled).toBe(3)
  })

  it('a handler error: retried with the delay below maxAttempts, dead-lettered at it; over it, dead-lettered unhandled', async () => {
    const src = source([{event: event('x'), attempt: 1}, {event: event('y'), attempt: 3}, {event: event('z'), attempt: 4}])
    let calls = 0
    const summary = await runLoop(src, {
      consumer: consumer(async (_e, effect) => (await effect(), 'applied')),
      handler: async () => {
        calls++
        throw new Error('nope')
      },
      maxAttempts: 3,
      retryDelayMs: 70,
      databaseReachable: async () => true,
    })
    expect(src.settled).toEqual([['x', 'retry:70'], ['y', 'dead'], ['z', 'dead']])
    expect(calls).toBe(2) // z was delivered more often than maxAttempts: a process that died on it each time
    expect(summary).toMatchObject({retried: 1, deadLettered: 2, settled: 2})
  })

  it('the database away: the message is held and tried again, never dead-lettered, and acked once it answers', async () => {
    const src = source([{event: event('x'), attempt: 5}])
    let down = 2
    const summary = await runLoop(src, {
      consumer: consumer(async (_e, effect) => {
        if (down-- > 0) throw new Error('connect ECONNREFUSED')
        await effect()
        return 'applied'
      }),
      handler: async () => {},
      maxAttempts: 5,
      databaseReachable: async () => down < 0,
    })
    expect(src.settled).toEqual([['x', 'ack']])
    expect(summary).toMatchObject({applied: 1, retried: 0, deadLettered: 0})
  })

  it('stopping while the database is away gives the message back at once, unsettled', async () => {
    const controller = new AbortController()
    const src = source([{event: event('x'), attempt: 5}])
    const summary = await runLoop(src, {
      consumer: consumer(async () => {
        controller.abort()
        throw new Error('connection terminated')
      }),
      handler: async () => {},
      maxAttempts: 5,
      signal: controller.signal,
      databaseReachable: async () => false,
    })
    expect(src.settled).toEqual([['x', 'retry:0']])
    expect(summary).toMatchObject({settled: 0, deadLettered: 0, stopped: true})
  })

  it('maxEvents with several workers: never takes more than it may settle', async () => {
    const src = source(Array.from({length: 20}, (_, i) => ({event: event(`e${i}`)})))
    const summary = await runLoop(src, {
      consumer: consumer(async (_e, effect) => (await effect(), 'applied')),
      handler: () => new Promise((resolve) => setTimeout(resolve, 5)),
      concurrency: 4,
      maxEvents: 7,
    })
    expect(summary).toMatchObject({applied: 7, settled: 7, stopped: false})
    expect(src.taken()).toBe(7)
  })
})
