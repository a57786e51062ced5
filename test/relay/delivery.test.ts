// The relay against real PostgreSQL, MariaDB and SQLite: delivery, concurrency, backoff and
// the failed state, lease takeover, graceful stop, per-aggregate ordering.
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {Consumer} from '../../src/consumer.js'
import {openDb, type Db} from '../../src/db/index.js'
import {databaseNow} from '../../src/ops/query.js'
import {undelivered} from '../../src/relay/backlog.js'
import {Relay, type RelayOptions} from '../../src/relay/relay.js'
import {count, seedEvents} from '../helpers/events.js'
import {gate, RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()

/**
 * created_at for events written while a relay runs: after its start, as a producer's are (the
 * insert's own time). Rows dated in the past by hand wait for the claim mark's reset on
 * PostgreSQL (test/relay/claim-mark.test.ts).
 */
const afterStart = () => new Date(Date.now() + 60_000)

interface EventRow {
  id: string
  attempts: number
  published_at: unknown
  failed_at: unknown
  lease_owner: string | null
  lease_until: unknown
  last_error: string | null
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`relay on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    const extra: Db[] = []

    const relay = (options: Partial<RelayOptions> & Pick<RelayOptions, 'publisher'>) => new Relay({db, tables: names, pollMs: 50, ...options})
    const row = async (id: string) =>
      (await db.query<EventRow>(sql`SELECT id, attempts, published_at, failed_at, lease_owner, lease_until, last_error FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${id}`))[0]

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `rl${target.dialect.slice(0, 2)}`, {inbox: true, archive: false}))
    })
    beforeEach(async () => {
      await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    })
    afterAll(async () => {
      for (const d of extra) await d.close()
      await closeTables(db, names)
    })

    it('drainOnce delivers every event once, oldest first, and marks them published', async () => {
      const ids = await seedEvents(db, names, {count: 25})
      const publisher = new RecordingPublisher()
      const result = await relay({publisher, batch: 10, maxBatch: 10}).drainOnce()
      expect(result).toEqual({published: 25, retried: 0, failed: 0, batches: 3})
      expect(publisher.sent.map((e) => e.id)).toEqual(ids)
      expect(await count(db, names, 'published_at IS NOT NULL AND lease_owner IS NULL AND lease_until IS NULL')).toBe(25)
      // the payload is the stored JSON text
      expect(JSON.parse(publisher.sent[3].payload)).toEqual({n: 3})
      expect(await relay({publisher}).drainOnce()).toEqual({published: 0, retried: 0, failed: 0, batches: 0})
    })

    it('undelivered(): what relay --once should have delivered, on the database clock', async () => {
      const now = await databaseNow(db)
      const before = await seedEvents(db, names, {count: 3, base: new Date(now.getTime() - 60_000)})
      const during = await seedEvents(db, names, {count: 2, base: new Date(now.getTime() + 60_000)})
      const table = raw(db.dialect.render.table(names, 'outbox'))
      const inAMinute = db.dialect.render.timeParam(new Date(now.getTime() + 60_000))
      // before[0]: another relay holds a live lease (theirs to report); before[1], during[0]: wait out a backoff
      await db.execute(sql`UPDATE ${table} SET lease_owner = 'other', lease_until = ${inAMinute}, attempts = 1 WHERE id = ${before[0]}`)
      for (const id of [before[1], during[0]]) await db.execute(sql`UPDATE ${table} SET lease_until = ${inAMinute}, attempts = 1 WHERE id = ${id}`)
      // ours: before[1] and before[2] (written before the run), during[0] (attempted); during[1] is the next run's
      expect(await undelivered(db, names, now)).toEqual({total: 3, waiting: 2})
      await db.execute(sql`UPDATE ${table} SET published_at = ${inAMinute} WHERE id = ${before[2]}`)
      await db.execute(sql`UPDATE ${table} SET failed_at = ${inAMinute} WHERE id = ${before[1]}`)
      expect(await undelivered(db, names, now)).toEqual({total: 1, waiting: 1})
    })

    it('4 concurrent relays (own connections, concurrency 2 each) deliver every event exactly once', async () => {
      const ids = await seedEvents(db, names, {count: 600, stepMs: 10})
      const publisher = new RecordingPublisher(async () => {
        await sleep(0) // yield, so the relays interleave
        return {ok: true}
      })
      const dbs = await Promise.all([0, 1, 2, 3].map(() => openDb(target.url)))
      extra.push(...dbs)
      const results = await Promise.all(dbs.map((d, i) => new Relay({db: d, publisher, tables: names, batch: 20, concurrency: 2, owner: `relay-${i}`}).drainOnce()))
      expect(results.reduce((n, r) => n + r.published, 0)).toBe(600)
      const counts = publisher.counts()
      expect(counts.size).toBe(600)
      expect([...counts].filter(([, n]) => n !== 1)).toEqual([]) // shows any id sent twice
      expect(new Set(counts.keys())).toEqual(new Set(ids))
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
      // on a server with row locks the work really was shared
      if (target.dialect !== 'sqlite') expect(results.map((r) => r.published).filter((n) => n > 0).length, JSON.stringify(results)).toBeGreaterThan(1)
    })

    it('failing events back off, then fail after exactly maxAttempts; the rest of the batch is published', async () => {
      const ids = await seedEvents(db, names, {count: 6})
      const bad = new Set([ids[1], ids[4]])
      const publisher = new RecordingPublisher((e) => (bad.has(e.id) ? {ok: false, error: `broker said no to ${e.id}`} : {ok: true}))
      // base 0: every retry is due at once (at the database clock's next tick: SQLite counts milliseconds)
      const r = relay({publisher, maxAttempts: 3, backoff: {baseMs: 0, capMs: 0}})
      const result = {published: 0, retried: 0, failed: 0, batches: 0}
      for (let i = 0; i < 20 && result.failed < 2; i++) {
        const part = await r.drainOnce()
        for (const k of Object.keys(result) as (keyof typeof result)[]) result[k] += part[k]
        await sleep(5)
      }
      expect(result.published).toBe(4)
      expect(result.failed).toBe(2)
      expect(result.retried).toBe(4)
      for (const id of bad) {
        expect(publisher.counts().get(id)).toBe(3)
        const r = await row(id)
        expect(Number(r.attempts)).toBe(3)
        expect(r.failed_at).not.toBeNull()
        expect(r.published_at).toBeNull()
        expect(r.last_error).toBe(`broker said no to ${id}`)
      }
      // failed events are never claimed again
      expect((await relay({publisher, maxAttempts: 3}).drainOnce()).batches).toBe(0)
    })

    it('a retry waits for its backoff: lease_until is the next attempt time on the database clock', async () => {
      const [id] = await seedEvents(db, names, {count: 1})
      const publisher = new RecordingPublisher(() => ({ok: false, error: 'HTTP 503'}))
      const r1 = await relay({publisher, backoff: {baseMs: 60_000, capMs: 60_000}}).drainOnce()
      expect(r1).toEqual({published: 0, retried: 1, failed: 0, batches: 1, outage: false, error: 'HTTP 503'})
      const r = await row(id)
      expect(r.lease_owner).toBeNull()
      expect(r.failed_at).toBeNull()
      // jittered delay is between half and all of 60s
      const due = await count(db, names, `id = '${id}' AND lease_until > ${db.dialect.render.now}`)
      expect(due).toBe(1)
      expect((await relay({publisher}).drainOnce()).batches).toBe(0)
      expect(publisher.sent).toHaveLength(1)
    })

    it('a permanent failure fails the event at once; a publisher that throws only fails its own events', async () => {
      const ids = await seedEvents(db, names, {count: 4})
      const publisher = new RecordingPublisher((e) => {
        if (e.id === ids[0]) return {ok: false, error: 'HTTP 400: bad payload', permanent: true}
        if (e.id === ids[3]) throw new Error('socket hang up')
        return {ok: true}
      })
      const result = await relay({publisher, backoff: {baseMs: 60_000, capMs: 60_000}}).drainOnce()
      // batch of 4 in halves [0,1] [2,3]: 0 fails permanently, 1 and 2 publish, the throw fails 2 and 3
      expect(result.failed).toBe(1)
      expect((await row(ids[0])).failed_at).not.toBeNull()
      expect(Number((await row(ids[0])).attempts)).toBe(1)
      expect((await row(ids[0])).last_error).toBe('HTTP 400: bad payload')
      expect((await row(ids[1])).published_at).not.toBeNull()
      expect((await row(ids[3])).last_error).toContain('socket hang up')
      expect((await row(ids[3])).published_at).toBeNull()
      expect((await row(ids[3])).failed_at).toBeNull()
    })

    it('a slow relay whose lease lapsed is taken over; its late mark is harmless and the consumer dedupes', async () => {
      const [id] = await seedEvents(db, names, {count: 1})
      const hold = gate()
      const slow = new RecordingPublisher(async () => {
        await hold.promise
        return {ok: true}
      })
      const fast = new RecordingPublisher()
      const slowRelay = relay({publisher: slow, leaseMs: 300, owner: 'slow'})
      const first = slowRelay.drainOnce()
      await until(() => slow.sent.length === 1, 10_000, 'slow relay to claim')
      await sleep(600) // the lease lapses on the database clock
      const second = await relay({publisher: fast, owner: 'fast'}).drainOnce()
      expect(second.published).toBe(1)
      const [{published_at: markedAt}] = await db.query<{published_at: unknown}>(
        sql`SELECT published_at FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${id}`,
      )
      hold.open()
      expect((await first).published).toBe(1)
      const r = await row(id)
      expect(Number(r.attempts)).toBe(2)
      expect(String(r.published_at)).toBe(String(markedAt)) // the late mark changed nothing
      expect(r.lease_owner).toBeNull()
      // delivered twice (a lapsed lease); the consumer applies it once
      const consumer = new Consumer(db, {consumer: 'ledger', tables: names})
      let effects = 0
      const outcomes = []
      for (const e of [...slow.sent, ...fast.sent]) outcomes.push(await consumer.handle(e, async () => void effects++))
      expect(outcomes.sort()).toEqual(['applied', 'duplicate'])
      expect(effects).toBe(1)
    })

    it('when the first half used up most of the lease, the second half is handed back unsent', async () => {
      const ids = await seedEvents(db, names, {count: 4})
      const publisher = new RecordingPublisher(async () => {
        await sleep(200)
        return {ok: true}
      })
      // halves of 2 events x 200ms = 400ms > 80% of a 450ms lease
      const result = await relay({publisher, leaseMs: 450, owner: 'late'}).drainOnce()
      expect(publisher.sent.slice(0, 2).map((e) => e.id)).toEqual(ids.slice(0, 2))
      expect((await row(ids[0])).published_at).not.toBeNull()
      expect(result.published).toBeGreaterThanOrEqual(2)
      // the second half went back unsent and was then claimed again, first half of a new batch
      expect(publisher.counts().get(ids[2])).toBe(1)
      expect(Number((await row(ids[2])).attempts)).toBe(1)
    })

    it('a late failure from a relay that lost its lease does not touch the new owner', async () => {
      const [id] = await seedEvents(db, names, {count: 1})
      const hold = gate()
      const slow = new RecordingPublisher(async () => {
        await hold.promise
        return {ok: false, error: 'late failure'}
      })
      const first = relay({publisher: slow, leaseMs: 300, owner: 'slow', maxAttempts: 1}).drainOnce()
      await until(() => slow.sent.length === 1, 10_000, 'slow relay to claim')
      await sleep(600)
      const taken = new RecordingPublisher(async () => ({ok: true}))
      await relay({publisher: taken, owner: 'new'}).drainOnce()
      hold.open()
      expect(await first).toEqual({published: 0, retried: 0, failed: 0, batches: 1, outage: false, error: 'late failure'})
      const r = await row(id)
      expect(r.published_at).not.toBeNull()
      expect(r.failed_at).toBeNull()
      expect(r.last_error).toBeNull()
    })

    it('start() delivers events as they arrive; stop() finishes the in-flight half and releases the unsent leases', async () => {
      const hold = gate()
      let holding = true
      const publisher = new RecordingPublisher(async () => {
        if (holding) await hold.promise
        return {ok: true}
      })
      const r = relay({publisher, batch: 10, owner: 'graceful'})
      const running = r.start()
      const ids = await seedEvents(db, names, {count: 10, base: afterStart()})
      await until(() => publisher.sent.length === 1, 10_000, 'the relay to start publishing')
      const stopped = r.stop()
      holding = false
      hold.open()
      await stopped
      await running
      // first half sent and marked; the second half is handed back, attempts undone
      expect(publisher.sent.map((e) => e.id)).toEqual(ids.slice(0, 5))
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(5)
      for (const id of ids.slice(5)) {
        const e = await row(id)
        expect(e.lease_owner).toBeNull()
        expect(e.lease_until).toBeNull()
        expect(Number(e.attempts)).toBe(0)
      }
      // and another relay can take them at once
      expect((await relay({publisher}).drainOnce()).published).toBe(5)
    })

    it('start() keeps polling: events written later are delivered', async () => {
      const publisher = new RecordingPublisher()
      const r = relay({publisher, pollMs: 30})
      const running = r.start()
      await sleep(100)
      const ids = await seedEvents(db, names, {count: 3, base: afterStart()})
      await until(() => publisher.sent.length === 3, 10_000, 'late events')
      await r.stop()
      await running
      expect(publisher.sent.map((e) => e.id)).toEqual(ids)
    })

    it('ordering aggregate: a retrying event is never overtaken by a newer one of its aggregate', async () => {
      const ids = await seedEvents(db, names, {count: 4, aggregateId: (i) => (i < 3 ? 'order-1' : 'order-2')})
      let failFirst = true
      const publisher = new RecordingPublisher((e) => {
        if (e.id === ids[0] && failFirst) {
          failFirst = false
          return {ok: false, error: 'try again'}
        }
        return {ok: true}
      })
      const options = {publisher, ordering: 'aggregate' as const, backoff: {baseMs: 400, capMs: 400}}
      const r1 = await relay(options).drainOnce()
      // order-2 is independent; order-1's later events wait behind the retry
      expect(r1.published).toBe(1)
      expect(publisher.sent.map((e) => e.id)).toEqual([ids[0], ids[3]])
      await sleep(450)
      await relay(options).drainOnce()
      expect(publisher.sent.map((e) => e.id)).toEqual([ids[0], ids[3], ids[0], ids[1], ids[2]])
    })
  })
}
