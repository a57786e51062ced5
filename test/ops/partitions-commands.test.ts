// The commands on a partitioned outbox (init --partition-by day), on both servers: the relay
// drains events spread over the catch-all, today's and a later partition in (created_at, id)
// order; failed, failed show and replay --ids find an event by its id alone; status reads it
// and names where the last range ends; archive moves the published rows; verify passes on a
// partitioned scratch table; chaos holds its invariants on partitioned run tables.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {markPublished} from '../../src/relay/claim.js'
import {cli, cliAsync} from '../helpers/cli.js'
import {count} from '../helpers/events.js'
import {insertRows} from '../helpers/rows.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {targets} from '../helpers/targets.js'

const DAY = 86_400
const matrix = await targets(['postgres', 'mysql'])

for (const target of matrix) {
  describe.skipIf(!target.available)(`commands on a partitioned outbox, ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, 'pk', {inbox: true, archive: true, partitionBy: 'day'}))
    })
    afterAll(() => closeTables(db, names))
    const flags = () => ['--url', target.url, '--table', names.outbox, '--inbox-table', names.inbox, '--archive-table', names.archive]
    const relayOnce = () => {
      const r = cli(['relay', ...flags(), '--publisher', 'stdout', '--batch', '2', '--once', '--quiet'])
      expect(r.status, r.stderr).toBe(0)
      return r.stdout.trim().split('\n').filter(Boolean).map((line) => String(JSON.parse(line).id))
    }

    it('relay --once drains the catch-all, today and a later partition in (created_at, id) order', async () => {
      const now = db.dialect.render.parseTime((await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`))[0].now) as Date
      // written out of order: two days ago (before the first range), in two days, a minute ago, past the last range
      const ids = await insertRows(db, names, now, [
        {created: 2 * DAY, aggregateId: 'a'},
        {created: -2 * DAY, aggregateId: 'a'},
        {created: -60, aggregateId: 'b'},
        {created: 30 * DAY, aggregateId: 'b'},
        {created: -2 * DAY + 1, aggregateId: 'c'},
      ])
      const listed = JSON.parse(cli(['partitions', ...flags(), '--json']).stdout) as {partitions: {rows: number}[]}
      expect(listed.partitions.filter((p) => p.rows > 0).length).toBeGreaterThanOrEqual(3)
      expect(relayOnce()).toEqual([ids[1], ids[4], ids[2], ids[0], ids[3]])
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
      expect(relayOnce()).toEqual([])
    })

    it('failed, failed show and replay --ids find a failed event by its id; the relay publishes it again', async () => {
      const now = db.dialect.render.parseTime((await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`))[0].now) as Date
      const [id] = await insertRows(db, names, now, [{created: -3 * DAY, failed: -60, attempts: 10, lastError: 'boom', type: 'order.failed'}])
      const listed = JSON.parse(cli(['failed', ...flags(), '--json']).stdout)
      expect(listed.events.map((e: {id: string}) => e.id)).toEqual([id])
      const shown = cli(['failed', 'show', id, ...flags(), '--json'])
      expect(shown.status, shown.stderr).toBe(0)
      expect(JSON.parse(shown.stdout)).toMatchObject({id, eventType: 'order.failed', lastError: 'boom'})

      const replay = cli(['replay', ...flags(), '--ids', id, '--yes', '--json'])
      expect(replay.status, replay.stderr).toBe(0)
      expect(await count(db, names, 'failed_at IS NULL AND published_at IS NULL')).toBe(1)
      expect(relayOnce()).toEqual([id])
    })

    it("the relay's mark is bounded by the events' created_at: it marks them in their partitions, and nothing outside the span", async () => {
      const now = db.dialect.render.parseTime((await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`))[0].now) as Date
      const ids = await insertRows(db, names, now, [{created: -DAY - 5}, {created: 3 * DAY}], 'outbox')
      const rows = await db.query(sql`SELECT id, created_at FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id IN (${ids[0]}, ${ids[1]})`)
      const events = rows.map((r) => ({id: String(r.id), createdAt: db.dialect.render.parseTime(r.created_at) as Date}))
      const elsewhere = {from: new Date(now.getTime() + 10 * DAY), to: new Date(now.getTime() + 11 * DAY)}
      expect(await db.execute(db.dialect.relay.markPublished(names, ids, elsewhere))).toBe(0)
      expect(await markPublished(db, names, events)).toBe(2)
      expect(await count(db, names, `published_at IS NULL`)).toBe(0)
    })

    it('status reads the partitioned table and says where the last range ends', async () => {
      const now = db.dialect.render.parseTime((await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`))[0].now) as Date
      await insertRows(db, names, now, [{created: -120}, {created: -30, failed: -10, attempts: 10, lastError: 'x'}])
      const r = cli(['status', ...flags(), '--json'])
      expect(r.status, r.stderr).toBe(0)
      const report = JSON.parse(r.stdout)
      expect(report).toMatchObject({pending: 1, failed: 1, published: 8})
      expect(report.partitions.warning).toBeNull()
      expect(new Date(report.partitions.lastEndsAt).getTime()).toBeGreaterThan(now.getTime() + 6 * DAY * 1000)
      expect(r.stderr).toBe('')
    })

    it('archive moves the published events out of every partition', async () => {
      const r = cli(['archive', ...flags(), '--before', '0s', '--min-published-age', '0s', '--yes', '--json'])
      expect(r.status, r.stderr).toBe(0)
      // the ones past the last range, two and three days ahead were created after --before
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(3)
      const archived = await db.query(sql`SELECT COUNT(*) AS n FROM ${raw(db.dialect.render.table(names, 'archive'))}`)
      expect(Number(archived[0].n)).toBe(5)
    })

    it('chaos --partition-by day: every invariant holds on a partitioned outbox', {timeout: 600_000}, async () => {
      const r = await cliAsync(['chaos', '--url', target.url, '--partition-by', 'day', '--json']).done
      expect(r.status, r.stderr + r.stdout.slice(0, 2000)).toBe(0)
      const report = JSON.parse(r.stdout)
      expect(report.ok).toBe(true)
      expect(report.runs.length).toBeGreaterThan(0)
    })

    it('verify --partition-by day passes on a partitioned scratch table', () => {
      const r = cli(['verify', '--url', target.url, '--partition-by', 'day', '--events', '300', '--claimers', '3', '--json'])
      expect(r.status, r.stderr).toBe(0)
      expect(JSON.parse(r.stdout).every((c: {status: string}) => c.status !== 'fail')).toBe(true)
    })
  })
}
