// `outbox status` reads one snapshot: while a relay moves events (pending -> published, and
// pending -> failed), every report's figures add up, on all three dialects.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {readStatus, type StatusReport} from '../../src/ops/status.js'
import {Relay} from '../../src/relay/relay.js'
import {seedEvents} from '../helpers/events.js'
import {RecordingPublisher, sleep} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const PER_TYPE = 150

for (const target of matrix) {
  describe.skipIf(!target.available)(`status snapshot on ${target.dialect}`, () => {
    let db: Db
    let relayDb: Db
    let names: TableNames

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `ss${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
      relayDb = await openDb(target.url) // the relay's own connections (SQLite: its own file handle)
    })
    afterAll(async () => {
      await relayDb?.close()
      await closeTables(db, names)
    })

    it('pending + failed + published == rows written in every read while a relay drains', async () => {
      const base = new Date(Date.now() - 120_000)
      await seedEvents(db, names, {count: PER_TYPE, eventType: 'a', base, stepMs: 10})
      await seedEvents(db, names, {count: PER_TYPE, eventType: 'b', base, stepMs: 10})
      const written = 2 * PER_TYPE
      // every fifth event is refused for good: it moves to failed; a short pause per event
      // keeps the drain going across many reads
      let n = 0
      const publisher = new RecordingPublisher(async () => {
        await sleep(1)
        return n++ % 5 === 4 ? {ok: false, error: 'refused', permanent: true} : {ok: true}
      })
      const relay = new Relay({db: relayDb, tables: names, publisher, batch: 7, pollMs: 20})
      let draining = true
      const drained = relay.drainOnce().finally(() => (draining = false))

      const reads: StatusReport[] = []
      while (draining) {
        reads.push(await readStatus(db, names, {windowMs: 3_600_000, byType: true}))
        await sleep(1) // SQLite answers without leaving the microtask queue: let the relay's timers run
      }
      const result = await drained
      reads.push(await readStatus(db, names, {windowMs: 3_600_000, byType: true}))

      expect(result.published + result.failed).toBe(written)
      const moving = reads.filter((r) => r.pending > 0 && r.pending < written)
      expect(moving.length, `${reads.length} reads, none while events were moving`).toBeGreaterThanOrEqual(5)
      for (const [i, r] of reads.entries()) {
        const seen = `read ${i}: pending ${r.pending}, failed ${r.failed}, published ${r.published}`
        expect(r.pending + r.failed + r.published, seen).toBe(written)
        // the per-type window is a statement of its own: it must agree with the total's
        const byType = r.byType!.reduce((sum, t) => sum + t.published, 0)
        expect(byType, seen).toBe(r.published)
      }
      expect(reads.at(-1)).toMatchObject({pending: 0, failed: result.failed, published: result.published})
    })
  })
}
