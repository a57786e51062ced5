// Claims that grow during a backlog (src/relay/batch-size.ts): every event still delivered, once,
// in order, on every dialect, a retried one included.
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {Relay, type RelayOptions} from '../../src/relay/relay.js'
import {count, seedEvents} from '../helpers/events.js'
import {RecordingPublisher} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const pending = 'published_at IS NULL AND failed_at IS NULL'

for (const target of matrix) {
  describe.skipIf(!target.available)(`growing claims on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    const table = () => raw(db.dialect.render.table(names, 'outbox'))

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `bg${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    beforeEach(async () => {
      await db.execute(sql`DELETE FROM ${table()}`)
    })
    afterAll(() => closeTables(db, names))

    /** the relay, and the size of each batch it claimed (its 'batch' log lines) */
    function relay(options: Partial<RelayOptions> & Pick<RelayOptions, 'publisher'>) {
      const claimed: number[] = []
      const logger = {info: (msg: string, f?: object) => void (msg === 'batch' && claimed.push((f as {claimed: number}).claimed)), warn() {}, error() {}}
      return {relay: new Relay({db, tables: names, pollMs: 50, logger, ...options}), claimed}
    }

    it('claims double while they come back full, up to maxBatch; every event once, in order', async () => {
      const ids = await seedEvents(db, names, {count: 70})
      const publisher = new RecordingPublisher()
      const r = relay({publisher, batch: 5, maxBatch: 20})
      const result = await r.relay.drainOnce()
      // 5, 10, 20, 20, 15; a claim sent ahead (while a batch is published) asks for the size
      // before that batch doubled it: 5, 10, 10, 20, 20, 5 then
      const [first, ...rest] = r.claimed
      expect(first).toBe(5)
      expect(rest.slice(0, -1).every((n, i) => n >= r.claimed[i] && [10, 20].includes(n))).toBe(true)
      expect(Math.max(...r.claimed)).toBe(20)
      expect(result).toEqual({published: 70, retried: 0, failed: 0, batches: r.claimed.length})
      expect(r.claimed.length).toBeLessThan(7) // 14 claims of 5
      expect(publisher.sent.map((e) => e.id)).toEqual(ids)
      expect(await count(db, names, pending)).toBe(0)
    })

    // 4 + 8 + 8 + 8 + 8 = 36: the retried event is pending again behind claims that grew past it
    it('an event retried mid-backlog (pending again behind the claims) is still delivered by the drain', async () => {
      const ids = await seedEvents(db, names, {count: 36})
      let failedOnce = false
      const publisher = new RecordingPublisher((e) => {
        if (e.id !== ids[2] || failedOnce) return {ok: true}
        failedOnce = true
        return {ok: false, error: 'once'}
      })
      const {relay: r} = relay({publisher, batch: 4, maxBatch: 8, backoff: {baseMs: 0, capMs: 0}})
      const result = await r.drainOnce()
      expect(result).toMatchObject({published: 36, retried: 1, failed: 0})
      expect(publisher.counts().get(ids[2])).toBe(2)
      expect(await count(db, names, pending)).toBe(0)
      const [{attempts}] = await db.query<{attempts: number}>(sql`SELECT attempts FROM ${table()} WHERE id = ${ids[2]}`)
      expect(Number(attempts)).toBe(2)
    })

    it('--ordering aggregate: a retried event still holds its aggregate back while the claims move on', async () => {
      const ids = await seedEvents(db, names, {count: 30, aggregateId: (i) => `agg-${i % 3}`})
      let failedOnce = false
      const publisher = new RecordingPublisher((e) => {
        if (e.id !== ids[4] || failedOnce) return {ok: true}
        failedOnce = true
        return {ok: false, error: 'once'}
      })
      const {relay: r} = relay({publisher, batch: 2, maxBatch: 8, ordering: 'aggregate', backoff: {baseMs: 0, capMs: 0}})
      expect(await r.drainOnce()).toMatchObject({published: 30, retried: 1})
      // per aggregate, the successes went out in created_at order, the retried one before its successors
      for (const agg of [0, 1, 2]) {
        const mine = ids.filter((_, i) => i % 3 === agg)
        const delivered = publisher.sent.map((e) => e.id).filter((id) => mine.includes(id))
        const lastSend = mine.map((id) => delivered.lastIndexOf(id))
        expect(lastSend).toEqual([...lastSend].sort((a, b) => a - b))
      }
    })

    it('concurrent loops with growing claims deliver every event exactly once', async () => {
      const ids = await seedEvents(db, names, {count: 300})
      const publisher = new RecordingPublisher()
      const {relay: r} = relay({publisher, batch: 5, maxBatch: 40, concurrency: 3})
      expect((await r.drainOnce()).published).toBe(300)
      const counts = publisher.counts()
      expect(ids.every((id) => counts.get(id) === 1)).toBe(true)
      expect(await count(db, names, pending)).toBe(0)
    })
  })
}
