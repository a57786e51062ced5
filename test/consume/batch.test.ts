// The shared loop's batches on a real Consumer (inbox on PostgreSQL) over a scripted source:
// what arrived while a transaction ran goes into the next one; every ack comes after its COMMIT;
// a handler error in the middle of a batch undoes and retries that delivery alone; a COMMIT that
// fails acks none; duplicates inside one batch are skipped; a redelivery runs alone.
import {randomBytes} from 'node:crypto'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql} from '../../dialects/index.js'
import {Consumer} from '../../src/consumer.js'
import type {ConsumedEvent} from '../../src/consume/event.js'
import {runLoop, type Delivery, type DeliverySource} from '../../src/consume/loop.js'
import type {Db} from '../../src/db/index.js'
import {exactlyOnce, fixture, type Fixture} from './fixture.js'

let fx: Fixture
let deferred: string
beforeAll(async () => {
  fx = await fixture('cbat')
  // checked at COMMIT only: an effect that writes one note twice fails its batch's COMMIT
  deferred = `${fx.names.outbox}_def`
  await fx.db.execute(sql`CREATE TABLE ${raw(deferred)} (note TEXT NOT NULL UNIQUE DEFERRABLE INITIALLY DEFERRED)`)
})
afterAll(async () => {
  await fx?.db.execute(sql`DROP TABLE IF EXISTS ${raw(deferred)}`).catch(() => {})
  await fx?.close()
})

const tag = () => randomBytes(3).toString('hex')
const event = (id: string): ConsumedEvent => ({id, eventType: 'order.created', aggregateType: 'order', aggregateId: 'a', aggregateVersion: null, payload: {}, headers: {}, createdAt: new Date(0)})
const ids = (n: number) => {
  const t = tag()
  return Array.from({length: n}, (_, i) => `0190c3c2-0000-7000-8000-${t}${String(i).padStart(6, '0')}`)
}

/**
 * A source holding every delivery at once (all received already), with ready(); records each
 * settlement, and the ids in each transaction the db ran (by wrapping its transaction()).
 */
function source(items: {id: string; attempt?: number}[]) {
  const settled: [string, string][] = []
  const queue = items.map(({id, attempt}): Delivery => ({
    event: event(id),
    attempt: attempt ?? 1,
    ack: async (outcome) => void settled.push([id, `ack:${outcome}`]),
    retry: async () => void settled.push([id, 'retry']),
    deadLetter: async () => void settled.push([id, 'dead']),
  }))
  const src: DeliverySource & {settled: typeof settled} = {
    settled,
    next: async () => queue.shift() ?? null,
    ready(max, accept) {
      let n = 0
      while (n < max && n < queue.length && accept(queue[n])) n++
      return queue.splice(0, n)
    },
    async stop() {},
    async close() {},
  }
  return src
}

/** fx.db, its transactions counted */
function counted(db: Db) {
  const transactions = {n: 0}
  const wrapped = Object.create(db) as Db
  wrapped.transaction = (fn, options) => (transactions.n++, db.transaction(fn, options))
  return {db: wrapped, transactions}
}

const run = (src: DeliverySource, db: Db, handler: (e: ConsumedEvent, tx: any) => Promise<void>, extra: {maxBatch?: number; maxEvents?: number; maxAttempts?: number} = {}) =>
  runLoop(src, {consumer: new Consumer(db, {consumer: 'batcher', tables: fx.names}), handler, maxBatch: 4, maxAttempts: 3, databaseReachable: async () => true, ...extra})

describe('runLoop with maxBatch, on a real Consumer', () => {
  it('takes what is ready into one transaction, up to maxBatch, and acks each after its COMMIT', async () => {
    const e = ids(6)
    const src = source(e.map((id) => ({id})))
    const {db, transactions} = counted(fx.db)
    const summary = await run(src, db, fx.record, {maxEvents: 6})
    expect(transactions.n).toBe(2) // 4 + 2
    expect(summary).toMatchObject({applied: 6, settled: 6, retried: 0})
    expect(src.settled).toEqual(e.map((id) => [id, 'ack:applied']))
    expect(exactlyOnce(await fx.counts(), e)).toEqual({missing: [], repeated: []})
  })

  it('a handler error in the middle of a batch: the others commit and are acked; that one alone is retried, or dead-lettered at maxAttempts', async () => {
    const e = ids(4)
    const src = source([{id: e[0]}, {id: e[1]}, {id: e[2]}, {id: e[3]}])
    const handler = async (ev: ConsumedEvent, tx: any) => {
      await fx.record(ev, tx) // undone with the throw
      if (ev.id === e[1]) throw new Error('cannot bill this order')
    }
    const summary = await run(src, fx.db, handler, {maxEvents: 3})
    // maxEvents 3: the first batch is e0..e2 (e1 given back), the next e3
    expect(src.settled).toEqual([[e[0], 'ack:applied'], [e[2], 'ack:applied'], [e[1], 'retry'], [e[3], 'ack:applied']])
    expect(summary).toMatchObject({applied: 3, retried: 1, deadLettered: 0})
    const counts = await fx.counts()
    expect(counts.has(e[1])).toBe(false)
    expect(exactlyOnce(counts, [e[0], e[2], e[3]])).toEqual({missing: [], repeated: []})
    // its last delivery: dead-lettered, alone (a redelivery is no batch's member)
    const last = source([{id: e[1], attempt: 3}])
    expect(await run(last, fx.db, handler, {maxEvents: 1})).toMatchObject({deadLettered: 1, applied: 0})
    expect(last.settled).toEqual([[e[1], 'dead']])
  })

  it('a COMMIT that fails acks none: each is given back, and delivered again alone the others apply once', async () => {
    const e = ids(3)
    const handler = async (ev: ConsumedEvent, tx: any) => {
      await fx.record(ev, tx)
      if (ev.id === e[1]) for (let i = 0; i < 2; i++) await tx.execute(sql`INSERT INTO ${raw(deferred)} (note) VALUES (${ev.id})`) // breaks the COMMIT
    }
    const first = source(e.map((id) => ({id})))
    const {db, transactions} = counted(fx.db)
    expect(await run(first, db, handler, {maxEvents: 3})).toMatchObject({applied: 0, retried: 3, settled: 0})
    expect(transactions.n).toBe(1)
    expect(first.settled.map(([, s]) => s)).toEqual(['retry', 'retry', 'retry'])
    expect([...(await fx.counts()).keys()].filter((id) => e.includes(id))).toEqual([])
    // the broker delivers them again (attempt 2): each in a transaction of its own
    const again = source(e.map((id) => ({id, attempt: 2})))
    const second = counted(fx.db)
    expect(await run(again, second.db, handler, {maxEvents: 3, maxAttempts: 5})).toMatchObject({applied: 2, retried: 1})
    expect(second.transactions.n).toBe(3)
    expect(again.settled).toEqual([[e[0], 'ack:applied'], [e[1], 'retry'], [e[2], 'ack:applied']])
    expect(exactlyOnce(await fx.counts(), [e[0], e[2]])).toEqual({missing: [], repeated: []})
  })

  it('duplicates inside one batch, and of an event applied before: acked as duplicates, the effect once', async () => {
    const [x, y] = ids(2)
    await run(source([{id: x}]), fx.db, fx.record, {maxEvents: 1})
    const src = source([{id: y}, {id: x}, {id: y}, {id: y}])
    const {db, transactions} = counted(fx.db)
    expect(await run(src, db, fx.record, {maxEvents: 4})).toMatchObject({applied: 1, duplicate: 3, settled: 4})
    expect(transactions.n).toBe(1)
    expect(src.settled).toEqual([[y, 'ack:applied'], [x, 'ack:duplicate'], [y, 'ack:duplicate'], [y, 'ack:duplicate']])
    expect(exactlyOnce(await fx.counts(), [x, y])).toEqual({missing: [], repeated: []})
  })

  it('a redelivery breaks a batch: it runs alone, what follows it starts the next; maxEvents bounds what is taken', async () => {
    const e = ids(6)
    const src = source([{id: e[0]}, {id: e[1]}, {id: e[2], attempt: 2}, {id: e[3]}, {id: e[4]}, {id: e[5]}])
    const batches: string[][] = []
    const consumer = new Consumer(fx.db, {consumer: 'batcher', tables: fx.names})
    const handleBatch = consumer.handleBatch.bind(consumer)
    const handle = consumer.handle.bind(consumer)
    consumer.handleBatch = (items) => (batches.push(items.map((i) => i.event.id)), handleBatch(items))
    consumer.handle = (ev, effect) => (batches.push([ev.id]), handle(ev, effect))
    const summary = await runLoop(src, {consumer, handler: fx.record, maxBatch: 4, maxEvents: 5})
    expect(batches).toEqual([[e[0], e[1]], [e[2]], [e[3], e[4]]])
    expect(summary).toMatchObject({applied: 5, settled: 5})
  })
})

