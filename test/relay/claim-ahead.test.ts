// The claim sent ahead (src/relay/ahead.ts): after a full batch, once publishing took a real
// share of a claim's time, the relay claims the next batch while the broker still has this
// one, on every dialect; a stop hands that claim back (leases and attempts), a failure of its
// publish loses nothing, and per-aggregate ordering sends none.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {Relay} from '../../src/relay/relay.js'
import {count, seedEvents} from '../helpers/events.js'
import {gate, RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const pending = 'published_at IS NULL AND failed_at IS NULL'

for (const target of matrix) {
  describe.skipIf(!target.available)(`claim sent ahead on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    const table = () => raw(db.dialect.render.table(names, 'outbox'))

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `ca${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(() => closeTables(db, names))

    async function fresh(n: number, aggregateId?: (i: number) => string): Promise<string[]> {
      await db.execute(sql`DELETE FROM ${table()}`)
      return seedEvents(db, names, {count: n, aggregateId})
    }

    const leasedBy = async (owner: string) => count(db, names, `${pending} AND lease_owner = '${owner}'`)

    /** A publisher that is slow on the first batch (so the loop sends claims ahead) and holds the fourth event until released. */
    function slowThenHeld(ids: string[]) {
      const held = gate()
      const publisher = new RecordingPublisher(async (e) => {
        if (ids.indexOf(e.id) < 3) await new Promise((r) => setTimeout(r, 20))
        if (e.id === ids[3]) await held.promise
        return {ok: true}
      })
      return {held, publisher}
    }

    it('leases the next batch while the publisher holds this one; stop() hands it back with its attempt', async () => {
      const ids = await fresh(9)
      const {held, publisher} = slowThenHeld(ids)
      const relay = new Relay({db, tables: names, publisher, batch: 3, pollMs: 60_000, owner: 'ahead-a'})
      const running = relay.start()
      try {
        await until(() => publisher.sent.length > 3, 20_000, 'the second batch handed to the publisher')
        // the batch held (3) and the one claimed ahead (3) are leased; the first is published
        await until(async () => (await leasedBy('ahead-a')) === 6, 20_000, 'the next batch leased while this one is published')
      } finally {
        const stopped = relay.stop()
        held.open()
        await stopped
        await running
      }
      const sent = publisher.sent.map((e) => e.id)
      expect(sent).toEqual(ids.slice(0, sent.length))
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(sent.length)
      // the batch claimed ahead was never sent: back, unleased, its attempt given back
      const rest = await db.query<{attempts: number}>(sql`SELECT attempts FROM ${table()} WHERE ${raw(pending)} AND lease_owner IS NULL`)
      expect(rest).toHaveLength(9 - sent.length)
      const ahead = await db.query<{attempts: number}>(sql`SELECT attempts FROM ${table()} WHERE id IN (${ids[6]}, ${ids[7]}, ${ids[8]})`)
      expect(ahead.map((r) => Number(r.attempts))).toEqual([0, 0, 0])
    })

    it('a drain with claims sent ahead delivers every event once, in order, and marks them all', async () => {
      const ids = await fresh(10)
      const publisher = new RecordingPublisher(async () => (await new Promise((r) => setTimeout(r, 2)), {ok: true}))
      const result = await new Relay({db, tables: names, publisher, batch: 3}).drainOnce()
      expect(result.published).toBe(10)
      expect(publisher.sent.map((e) => e.id)).toEqual(ids)
      expect(await count(db, names, pending)).toBe(0)
    })

    it('a batch whose publish fails: retried later, the batch claimed ahead still delivered', async () => {
      const ids = await fresh(6)
      let failFirst = true
      const publisher = new RecordingPublisher((e) => (e.id === ids[0] && failFirst ? ((failFirst = false), {ok: false, error: 'nope'}) : {ok: true}))
      const relay = new Relay({db, tables: names, publisher, batch: 3, backoff: {baseMs: 0, capMs: 0}})
      await relay.drainOnce()
      // a lease lapses when lease_until < now: with no backoff, a drain in the same millisecond
      // (SQLite's clock resolution) would not see the retry yet
      await sleep(5)
      await relay.drainOnce()
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(6)
      expect(new Set(publisher.sent.map((e) => e.id))).toEqual(new Set(ids))
    })

    it('per-aggregate ordering claims nothing ahead', async () => {
      const ids = await fresh(9, (i) => `order-${i}`)
      const {held, publisher} = slowThenHeld(ids)
      const relay = new Relay({db, tables: names, publisher, batch: 3, maxBatch: 3, pollMs: 60_000, ordering: 'aggregate', owner: 'ahead-o'})
      const running = relay.start()
      try {
        await until(() => publisher.sent.length > 3, 20_000, 'the second batch handed to the publisher')
        await new Promise((r) => setTimeout(r, 200))
        expect(await leasedBy('ahead-o')).toBe(3)
      } finally {
        const stopped = relay.stop()
        held.open()
        await stopped
        await running
      }
    })
  })
}
