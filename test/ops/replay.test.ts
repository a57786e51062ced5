// `outbox replay` on all three dialects: range boundaries, filters, leased rows, dry runs,
// batching, copying back from the archive, and the CLI's refusals.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {databaseNow} from '../../src/ops/query.js'
import {replay} from '../../src/ops/replay.js'
import {cli} from '../helpers/cli.js'
import {clear, ids, insertRows, snapshot, type RowSpec} from '../helpers/rows.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()

// name -> row; created is seconds before the database clock
const STATE: Record<string, RowSpec> = {
  atSince: {type: 'a', created: -3600, published: -3500, attempts: 1},
  published: {type: 'a', created: -1800, published: -1790, attempts: 1},
  failed: {type: 'b', created: -1200, failed: -1100, attempts: 5, lastError: 'poison'},
  leased: {type: 'a', created: -900, leaseOwner: 'relay-live', leaseUntil: 600, attempts: 1},
  lapsed: {type: 'b', created: -800, leaseOwner: 'relay-dead', leaseUntil: -60, attempts: 2, lastError: 'timeout'},
  atUntil: {type: 'a', created: -600, published: -590, attempts: 1},
  beforeSince: {type: 'a', created: -7200, published: -7100, attempts: 1},
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`replay on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let now: Date
    let id: Record<string, string>
    const iso = (seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString()
    const flags = () => ['--url', target.url, '--table', names.outbox, '--archive-table', names.archive]
    const outbox = () => raw(db.dialect.render.table(names, 'outbox'))

    async function reset() {
      await clear(db, names)
      now = await databaseNow(db)
      const keys = Object.keys(STATE)
      const inserted = await insertRows(db, names, now, Object.values(STATE))
      id = Object.fromEntries(keys.map((k, i) => [k, inserted[i]]))
    }

    async function row(key: string) {
      const [r] = await db.query(sql`SELECT published_at, failed_at, lease_owner, lease_until, last_error, attempts FROM ${outbox()} WHERE id = ${id[key]}`)
      return r
    }

    function deliverable(r: Record<string, unknown>) {
      return r.published_at === null && r.failed_at === null && r.lease_owner === null && r.lease_until === null && r.last_error === null && Number(r.attempts) === 0
    }

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `rp${target.dialect.slice(0, 2)}`, {inbox: false, archive: true}))
    })
    afterAll(() => closeTables(db, names))

    it('replays [since, until): since inclusive, until exclusive, leased rows skipped and reported', async () => {
      await reset()
      const r = await replay(db, names, {since: iso(-3600), until: iso(-600), batch: 2})
      expect(r).toMatchObject({dryRun: false, matched: 5, replayed: 4, skippedLeased: 1, skippedLeasedIds: [id.leased], byType: {a: 2, b: 2}})
      expect(r.sample).toEqual(['atSince', 'published', 'failed', 'lapsed'].map((key) => ({id: id[key], eventType: STATE[key].type, createdAt: iso(STATE[key].created!)})))
      expect(r.doneThrough).toBe(iso(STATE.lapsed.created!))
      for (const key of ['atSince', 'published', 'failed', 'lapsed']) expect(deliverable(await row(key)), key).toBe(true)
      expect(await row('leased')).toMatchObject({lease_owner: 'relay-live'})
      expect((await row('atUntil')).published_at).not.toBeNull()
      expect((await row('beforeSince')).published_at).not.toBeNull()
      // the ids are kept: consumers dedupe on them
      expect((await ids(db, names)).sort()).toEqual(Object.values(id).sort())
    })

    // MySQL's UPDATE counts only the rows it changes: a pending row never tried is left as it
    // is, yet it is replayed like the others, as the dry run says (the batch plan's updateCounts)
    it('a row that is already deliverable counts as replayed, as in the dry run', async () => {
      await clear(db, names)
      now = await databaseNow(db)
      const specs: RowSpec[] = [
        {type: 'a', created: -300, published: -290, attempts: 1},
        {type: 'b', created: -299},
        {type: 'a', created: -298, leaseOwner: 'relay-live', leaseUntil: 600, attempts: 1},
        {type: 'b', created: -297},
        {type: 'a', created: -296, attempts: 3, lastError: 'timeout'},
      ]
      const rows = await insertRows(db, names, now, specs)
      const expected = {matched: 5, replayed: 4, skippedLeased: 1, skippedLeasedIds: [rows[2]], byType: {a: 2, b: 2}}
      const {replayed, ...planned} = expected
      expect(await replay(db, names, {since: iso(-300), dryRun: true})).toMatchObject({...planned, wouldReplay: replayed})
      expect(await replay(db, names, {since: iso(-300), batch: 2})).toMatchObject({...expected, batches: 3})
      expect(await replay(db, names, {since: iso(-300), batch: 10})).toMatchObject({...expected, batches: 1})
    })

    // the keyset cursor is (created_at, id): a batch boundary inside a run of equal created_at,
    // with a leased row among them, must neither skip nor repeat a row
    it('rows sharing one created_at split across batches are each replayed once', async () => {
      await reset()
      const specs = Array.from({length: 7}, (_, i): RowSpec => (i === 3 ? {type: 't', created: -300, leaseOwner: 'relay-live', leaseUntil: 600, attempts: 1} : {type: 't', created: -300, published: -290, attempts: 1}))
      const tied = await insertRows(db, names, now, specs)
      const r = await replay(db, names, {since: iso(-300), batch: 2})
      expect(r).toMatchObject({matched: 7, replayed: 6, skippedLeased: 1, skippedLeasedIds: [tied[3]], byType: {t: 6}, batches: 4})
      const rows = await db.query(sql`SELECT id, published_at, lease_owner FROM ${outbox()} WHERE event_type = 't'`)
      expect(rows.filter((x) => x.published_at === null && x.lease_owner === null).map((x) => String(x.id)).sort()).toEqual(tied.filter((_, i) => i !== 3).sort())
    })

    // SQLite changes a batch through the rowid span of its rows when the span is tight
    // (the batch plan's locator), else through the created_at index: rows outside the batch stored
    // between its rows (after --until, another --type, leased) must be left alone either way
    for (const [layout, between] of [['side by side', 1], ['far apart', 12]] as const) {
      it(`a batch changes its own rows only, with other rows stored between them (${layout})`, async () => {
        await clear(db, names)
        now = await databaseNow(db)
        const specs: RowSpec[] = []
        const wanted: number[] = []
        for (let i = 0; i < 8; i++) {
          wanted.push(specs.length)
          specs.push({type: 'in', created: -500 + i, published: -400, attempts: 1})
          for (let j = 0; j < between; j++) specs.push(j % 2 ? {type: 'in', created: -100 + i, published: -50, attempts: 1} : {type: 'other', created: -500 + i, published: -400, attempts: 1})
          if (i === 4) specs.push({type: 'in', created: -495.5, leaseOwner: 'relay-live', leaseUntil: 600, attempts: 1})
        }
        const rows = await insertRows(db, names, now, specs)
        const leasedId = rows[specs.findIndex((x) => x.leaseOwner)]
        const r = await replay(db, names, {since: iso(-500), until: iso(-200), types: ['in'], batch: 3})
        expect(r).toMatchObject({matched: 9, replayed: 8, skippedLeased: 1, skippedLeasedIds: [leasedId], byType: {in: 8}, batches: 3})
        const replayed = await db.query(sql`SELECT id FROM ${outbox()} WHERE published_at IS NULL AND lease_owner IS NULL ORDER BY id`)
        expect(replayed.map((x) => String(x.id))).toEqual(wanted.map((i) => rows[i]).sort())
      })
    }

    // each batch judges leases at its own instant, though its statement is built once per shape
    // (the third batch here reuses the second one's: the sample was full after the first)
    it('a lease that lapses during a run no longer holds its row back in a later batch', async () => {
      await clear(db, names)
      now = await databaseNow(db)
      const published = Array.from({length: 20}, (_, i): RowSpec => ({type: 'a', created: -100 + i, published: -90 + i, attempts: 1}))
      const rows = await insertRows(db, names, now, [...published, {type: 'a', created: -10, leaseOwner: 'relay-slow', leaseUntil: 2, attempts: 1}])
      // after the second batch, wait (blocking: the next batch starts when onProgress returns) until the lease has lapsed
      const waitPastLease = (p: {batches: number}) => p.batches === 2 && Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000)
      const r = await replay(db, names, {since: iso(-120), batch: 10, onProgress: waitPastLease})
      expect(r).toMatchObject({matched: 21, replayed: 21, skippedLeased: 0, batches: 3})
      expect((await ids(db, names)).sort()).toEqual([...rows].sort())
    })

    it('a dry run reports the same and changes nothing', async () => {
      await reset()
      const before = await snapshot(db, names)
      const r = await replay(db, names, {since: iso(-3600), until: iso(-600), dryRun: true})
      expect(r).toMatchObject({dryRun: true, matched: 5, wouldReplay: 4, skippedLeased: 1, skippedLeasedIds: [id.leased], byType: {a: 2, b: 2}})
      // nothing was replayed, so a dry run does not say `replayed`, nor batches of a run it did not do
      expect(r).not.toHaveProperty('replayed')
      expect(r).not.toHaveProperty('batches')
      expect(r.sample.map((s) => s.id)).toEqual([id.atSince, id.published, id.failed, id.lapsed])
      expect(await snapshot(db, names)).toBe(before)
    })

    it('--failed, --ids, --type and --aggregate narrow the selection; batch 1 still visits each row once', async () => {
      await reset()
      expect(await replay(db, names, {failedOnly: true, batch: 1})).toMatchObject({replayed: 1, byType: {b: 1}, batches: 1})
      expect(deliverable(await row('failed'))).toBe(true)
      await reset()
      expect(await replay(db, names, {ids: [id.published, id.leased, id.beforeSince]})).toMatchObject({replayed: 2, skippedLeased: 1})
      await reset()
      const typed = await replay(db, names, {since: iso(-100_000), types: ['a'], batch: 1})
      expect(typed).toMatchObject({matched: 5, replayed: 4, skippedLeased: 1, byType: {a: 4}, batches: 5})
      await reset()
      expect(await replay(db, names, {since: iso(-100_000), aggregateId: 'agg-1'})).toMatchObject({replayed: 1, sample: [{id: id.published}]})
    })

    it('ids are found however their case was written (stored lower case; older rows as given)', async () => {
      await reset()
      const upper = '0190F5E4-6C1A-7B9E-8D2F-3A4B5C6D7E8F'
      await insertRows(db, names, now, [{id: upper, type: 'u', created: -600, published: -590}])
      const missing = cli(['replay', ...flags(), '--ids', '00000000-0000-7000-8000-00000000dead', '--yes'])
      expect(missing.stderr).toMatch(/--ids: 1 of 1 not in .*00000000-0000-7000-8000-00000000dead; nothing changed/)
      expect(await replay(db, names, {ids: [upper.toLowerCase(), id.published.toUpperCase()]})).toMatchObject({replayed: 2})
      const shown = cli(['failed', 'show', upper, ...flags(), '--json'])
      expect(shown.status).toBe(0)
      expect(JSON.parse(shown.stdout)).toMatchObject({eventType: 'u', state: 'pending'})
    })

    it('a duration means ago on the database clock', async () => {
      await reset()
      // 25m ago: failed (-20m), leased (-15m), lapsed (-13m20s), atUntil (-10m)
      expect(await replay(db, names, {since: '25m'})).toMatchObject({matched: 4, replayed: 3, skippedLeased: 1})
    })

    it('--from-archive moves rows back as pending; an id already in the outbox stays archived', async () => {
      await reset()
      const archived = await insertRows(db, names, now, [
        {type: 'c', created: -5000, published: -4900, attempts: 3},
        {type: 'c', created: -4000, published: -3900, attempts: 1},
        {id: id.published, type: 'a', created: -1800, published: -1790},
      ], 'archive')
      const plan = await replay(db, names, {fromArchive: true, since: iso(-6000), dryRun: true})
      expect(plan).toMatchObject({source: 'archive', matched: 3, wouldReplay: 2, alreadyInOutbox: 1, alreadyInOutboxIds: [id.published]})
      const r = await replay(db, names, {fromArchive: true, since: iso(-6000), batch: 1})
      expect(r).toMatchObject({source: 'archive', matched: 3, replayed: 2, alreadyInOutbox: 1, alreadyInOutboxIds: [id.published], byType: {c: 2}})
      expect(await ids(db, names, 'archive')).toEqual([id.published])
      const back = await db.query(sql`SELECT attempts, published_at, payload FROM ${outbox()} WHERE id = ${archived[0]}`)
      expect(back).toHaveLength(1)
      expect(back[0]).toMatchObject({published_at: null})
      expect(Number(back[0].attempts)).toBe(0)
    })

    it('the CLI refuses without --yes off a terminal, and bad input, changing nothing (exit 2)', async () => {
      await reset()
      const before = await snapshot(db, names)
      for (const args of [
        ['--since', '2h'],
        ['--yes'],
        ['--since', 'yesterday', '--yes'],
        ['--since', '2026-01-31T12:00:00', '--yes'],
        ['--since', '2h', '--until', '3h', '--yes'],
        ['--ids', 'not-a-uuid', '--yes'],
        ['--failed', '--from-archive', '--yes'],
        ['--since', '2h', '--batch', '0', '--yes'],
        // an id the table does not hold is named, and nothing changes (not: the others replayed)
        ['--ids', `${id.published},00000000-0000-7000-8000-00000000dead`, '--yes'],
        ['--ids', id.published, '--from-archive', '--yes'],
        ['--since', '2h', '--type', '', '--yes'],
        ['--since', '2h', '--aggregate', ' ', '--yes'],
      ]) {
        const r = cli(['replay', ...flags(), ...args])
        expect(r.status, args.join(' ')).toBe(2)
        expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1)
      }
      expect(await snapshot(db, names)).toBe(before)
    })

    it('the CLI replays with --yes and prints counts per type; --dry-run --json says what it would do', async () => {
      await reset()
      const dry = cli(['replay', ...flags(), '--since', iso(-3600), '--until', iso(-600), '--dry-run', '--json'])
      expect(dry.status).toBe(0)
      const plan = JSON.parse(dry.stdout)
      const r = cli(['replay', ...flags(), '--since', iso(-3600), '--until', iso(-600), '--yes', '--json', '--batch', '2'])
      expect(r.status).toBe(0)
      const done = JSON.parse(r.stdout)
      // the same selection fields; a plan says wouldReplay, a run says replayed and its batches
      const shared = (o: object) => Object.keys(o).filter((k) => !['dryRun', 'wouldReplay', 'replayed', 'batches', 'interrupted', 'doneThrough'].includes(k)).sort()
      expect(shared(done)).toEqual(shared(plan))
      expect(plan).toMatchObject({dryRun: true, wouldReplay: 4})
      expect(plan).not.toHaveProperty('replayed')
      expect(done).toMatchObject({dryRun: false, replayed: plan.wouldReplay, byType: plan.byType, skippedLeased: 1})
      expect(done).not.toHaveProperty('wouldReplay')
      const textPlan = cli(['replay', ...flags(), '--since', iso(-3600), '--until', iso(-600), '--dry-run'])
      expect(textPlan.stdout).toMatch(/^dry run: would replay \d+ of 5 matching event\(s\)/)
      expect(textPlan.stdout).not.toMatch(/replayed/)
      const text = cli(['replay', ...flags(), '--failed', '--yes'])
      expect(text.status).toBe(0)
      expect(text.stdout).toMatch(/replayed 0 event\(s\)/) // already replayed above
    })
  })
}
