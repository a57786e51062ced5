// `outbox archive` on all three dialects: the cutoff boundaries, what it never touches, dry
// runs, --delete, --to-file, and a crash mid-batch losing nothing.
import {mkdtempSync, readFileSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {archive} from '../../src/ops/archive.js'
import {databaseNow} from '../../src/ops/query.js'
import {cli, cliAsync} from '../helpers/cli.js'
import {until} from '../helpers/publishers.js'
import {clear, ids, inExactlyOneTable, insertRows, snapshot, type RowSpec} from '../helpers/rows.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const DAY = 86_400

const STATE: Record<string, RowSpec> = {
  old: {type: 'a', created: -40 * DAY, published: -40 * DAY + 1},
  justBefore: {type: 'b', created: -30 * DAY - 0.001, published: -30 * DAY + 5},
  atCutoff: {type: 'a', created: -30 * DAY, published: -30 * DAY + 5},
  pending: {type: 'a', created: -60 * DAY},
  leased: {type: 'a', created: -60 * DAY, leaseOwner: 'relay', leaseUntil: 60, attempts: 1},
  failed: {type: 'a', created: -60 * DAY, failed: -59 * DAY, attempts: 5},
  publishedRecently: {type: 'a', created: -35 * DAY, published: -3600},
  published25hAgo: {type: 'b', created: -35 * DAY, published: -25 * 3600},
}
const MOVED = ['old', 'justBefore', 'published25hAgo']
const BULK = 25

for (const target of matrix) {
  describe.skipIf(!target.available)(`archive on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let now: Date
    let id: Record<string, string>
    let bulk: string[]
    const dir = mkdtempSync(join(tmpdir(), 'outbox-archive-'))
    const flags = () => ['--url', target.url, '--table', names.outbox, '--archive-table', names.archive]
    const cutoff = () => new Date(now.getTime() - 30 * DAY * 1000).toISOString()

    async function reset(extra = BULK) {
      await clear(db, names)
      now = await databaseNow(db)
      const inserted = await insertRows(db, names, now, Object.values(STATE))
      id = Object.fromEntries(Object.keys(STATE).map((k, i) => [k, inserted[i]]))
      const rows = Array.from({length: extra}, (_, i): RowSpec => ({type: 'c', created: -50 * DAY + i, published: -50 * DAY + i + 1}))
      bulk = await insertRows(db, names, now, rows)
    }
    const moved = () => [...MOVED.map((k) => id[k]), ...bulk].sort()
    const kept = () => Object.keys(STATE).filter((k) => !MOVED.includes(k)).map((k) => id[k]).sort()

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `ar${target.dialect.slice(0, 2)}`, {inbox: false, archive: true}))
    })
    afterAll(() => closeTables(db, names))

    // ids for the two ways MariaDB/MySQL delete a batch: ascending with created_at (time-ordered,
    // like UUIDv7: the batch is also an id range) or not (descending here: by created_at only)
    const SHAPES = {ascending: (i: number) => i, descending: (i: number) => 1000 - i}
    const idOf = (n: number) => `00000000-0000-7000-8000-${n.toString(16).padStart(12, '0')}`

    // 12 rows, batches of 4, row 9 (the third batch's first) held by another session
    async function heldRowStopsItsBatch(order: (i: number) => number) {
      await clear(db, names)
      now = await databaseNow(db)
      const rows = Array.from({length: 12}, (_, i): RowSpec => ({id: idOf(order(i)), type: 'c', created: -50 * DAY + i, published: -50 * DAY + i + 1}))
      const inserted = await insertRows(db, names, now, rows)
      const other = await openDb(target.url)
      try {
        let run!: Promise<unknown>
        await other.transaction(async (tx) => {
          await tx.query(sql`SELECT id FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${inserted[8]} FOR UPDATE`)
          run = archive(db, names, {before: cutoff(), batch: 4})
          await until(async () => (await ids(db, names, 'archive')).length === 8, 15_000, 'batches 1 and 2 committed while row 9 is held')
        })
        expect(await run).toMatchObject({archived: 12, batches: 3})
      } finally {
        await other.close()
      }
      expect(await inExactlyOneTable(db, names, inserted)).toBe(12)
    }

    // Random ids put a batch's smallest first and its largest last by chance (1 in 12 for 4
    // rows): the batch is no id range then, and reading one would run into rows outside it
    // (here the held row, whose id lies between the second batch's first and last ids)
    it.skipIf(target.dialect === 'sqlite')('a held row stops the batch that reaches it, not the one before (ids smallest first and largest last, not in order)', () =>
      heldRowStopsItsBatch((i) => 1000 * Math.floor(i / 4) + [0, 600, 500, 1250][i % 4]),
    )

    // MariaDB/MySQL delete a batch by its range with LIMIT <rows locked>: a row that enters
    // the range after the copy (another session inserts an event created in the past; at READ
    // COMMITTED nothing locks the gap) would be deleted in place of the batch's last row. That
    // row must then still be there, and the batch rolls back: nothing is in neither table,
    // nothing in both. (A row already in the range that changes to match is no such case: the
    // batch's locking read holds every row of its range until it commits.)
    for (const [shape, order] of Object.entries(SHAPES)) {
      it.skipIf(target.dialect !== 'mysql')(`a row entering the batch range between copy and delete rolls the batch back (ids ${shape})`, async () => {
        await clear(db, names)
        now = await databaseNow(db)
        const rows: RowSpec[] = Array.from({length: 6}, (_, i) => ({id: idOf(order(i * 10)), type: 'c', created: -50 * DAY + i, published: -50 * DAY + i + 1}))
        const inserted = await insertRows(db, names, now, rows)
        // between the 2nd and 3rd by created_at and by id
        const intruder: RowSpec = {id: idOf(order(15)), type: 'c', created: -50 * DAY + 1.5, published: -49 * DAY}
        let entered = false
        const meddling: Db = {
          ...db,
          transaction: (fn, options) =>
            db.transaction(
              (tx) =>
                fn({
                  ...tx,
                  execute: async (s, o) => {
                    if (!entered && /^delete/i.test(db.dialect.render.compile(s).text.trim())) {
                      entered = true // another session, committed before the delete runs
                      await insertRows(db, names, now, [intruder])
                    }
                    return tx.execute(s, o)
                  },
                }),
              options,
            ),
        }
        await expect(archive(meddling, names, {before: cutoff(), batch: 4})).rejects.toThrow(/entered the batch's range/)
        expect(entered).toBe(true)
        expect(await ids(db, names, 'archive')).toEqual([])
        const all = [...inserted, intruder.id!]
        expect((await ids(db, names, 'outbox')).sort()).toEqual([...all].sort())
        // a rerun takes the intruder along with the rest
        expect((await archive(db, names, {before: cutoff(), batch: 4})).archived).toBe(7)
        expect(await inExactlyOneTable(db, names, all)).toBe(7)
      })

      // the batch's own delete must not wait on the next batch's first row: another session
      // holds it, the batches before it commit while the batch that reaches it waits
      it.skipIf(target.dialect === 'sqlite')(`a held row stops the batch that reaches it, not the one before (ids ${shape})`, () => heldRowStopsItsBatch(order))

      it(`--delete purges batch by batch, nothing else (ids ${shape})`, async () => {
        await clear(db, names)
        now = await databaseNow(db)
        const rows = Array.from({length: 10}, (_, i): RowSpec => ({id: idOf(order(i)), type: 'c', created: -50 * DAY + i, published: i === 5 ? undefined : -50 * DAY + i + 1}))
        const inserted = await insertRows(db, names, now, rows)
        expect(await archive(db, names, {before: cutoff(), batch: 4, delete: true})).toMatchObject({archived: 9, batches: 3})
        expect(await ids(db, names, 'outbox')).toEqual([inserted[5]]) // the pending one
        expect(await ids(db, names, 'archive')).toEqual([])
      })
    }

    it('moves published events created before the cutoff (exclusive), published over 24h ago; never the rest', async () => {
      await reset()
      const before = await db.query(await rowsOf(moved()))
      const r = await archive(db, names, {before: cutoff(), batch: 7})
      expect(r).toMatchObject({dryRun: false, mode: 'move', archived: 3 + BULK, byType: {a: 1, b: 2, c: BULK}, batches: 4})
      // the sample is the first ten moved, oldest first, with their created_at
      const createdAt = (seconds: number) => new Date(now.getTime() + seconds * 1000).toISOString()
      expect(r.sample).toEqual(bulk.slice(0, 10).map((id, i) => ({id, eventType: 'c', createdAt: createdAt(-50 * DAY + i)})))
      expect(await ids(db, names, 'outbox')).toEqual(kept())
      expect(await ids(db, names, 'archive')).toEqual(moved())
      // the archive holds the same rows, column for column
      const after = await db.query(await rowsOf(moved(), 'archive'))
      expect(after).toEqual(before)
    })

    // the keyset cursor is (created_at, id): a batch boundary inside a run of equal created_at
    // must neither skip nor repeat a row
    it('rows sharing one created_at split across batches are each moved once', async () => {
      await reset(0)
      const tied = await insertRows(db, names, now, Array.from({length: 7}, (): RowSpec => ({type: 'd', created: -45 * DAY, published: -45 * DAY + 1})))
      const r = await archive(db, names, {before: cutoff(), batch: 2})
      expect(r).toMatchObject({archived: 3 + 7, byType: {a: 1, b: 2, d: 7}, batches: 5})
      expect(await ids(db, names, 'archive')).toEqual([...MOVED.map((k) => id[k]), ...tied].sort())
      expect(await ids(db, names, 'outbox')).toEqual(kept())
    })

    // SQLite moves a batch through the rowid span of its rows when the span is tight
    // (the batch plan's locator), else through the created_at index: rows that must stay (pending,
    // failed, published recently, created after the cutoff) stored between them stay either way
    for (const [layout, between] of [['side by side', 1], ['far apart', 12]] as const) {
      it(`a batch moves its own rows only, with other rows stored between them (${layout})`, async () => {
        await clear(db, names)
        now = await databaseNow(db)
        const stay: RowSpec[] = [
          {type: 'c', created: -50 * DAY},
          {type: 'c', created: -50 * DAY, failed: -49 * DAY, attempts: 5},
          {type: 'c', created: -50 * DAY, published: -3600},
          {type: 'c', created: -10 * DAY, published: -9 * DAY},
        ]
        const specs: RowSpec[] = []
        const wanted: number[] = []
        for (let i = 0; i < 8; i++) {
          wanted.push(specs.length)
          specs.push({type: 'c', created: -50 * DAY + i, published: -50 * DAY + i + 1})
          for (let j = 0; j < between; j++) specs.push({...stay[(i + j) % stay.length], created: stay[(i + j) % stay.length].created + i})
        }
        const rows = await insertRows(db, names, now, specs)
        const r = await archive(db, names, {before: cutoff(), batch: 3})
        expect(r).toMatchObject({archived: 8, byType: {c: 8}, batches: 3})
        expect(await ids(db, names, 'archive')).toEqual(wanted.map((i) => rows[i]).sort())
        expect(await inExactlyOneTable(db, names, rows)).toBe(8)
      })
    }

    it('a dry run counts the same rows and changes nothing', async () => {
      await reset()
      const snap = await snapshot(db, names)
      const r = await archive(db, names, {before: cutoff(), dryRun: true, toFile: join(dir, 'dry.jsonl')})
      expect(r).toMatchObject({dryRun: true, wouldArchive: 3 + BULK, byType: {a: 1, b: 2, c: BULK}})
      expect(r).not.toHaveProperty('archived')
      expect(r.sample.map((s) => s.id)).toEqual([...bulk.slice(0, 10)])
      expect(await snapshot(db, names)).toBe(snap)
      expect(() => readFileSync(join(dir, 'dry.jsonl'))).toThrow()
    })

    it('--min-published-age 0 also takes recently published ones; --delete purges; --to-file writes every row', async () => {
      await reset()
      const file = join(dir, `${target.dialect}.jsonl`)
      const r = await archive(db, names, {before: cutoff(), minPublishedAgeMs: 0, delete: true, toFile: file, batch: 10})
      expect(r.archived).toBe(4 + BULK)
      expect(await ids(db, names, 'archive')).toEqual([])
      const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
      expect(lines.map((l) => l.id).sort()).toEqual([...moved(), id.publishedRecently].sort())
      expect(lines.find((l) => l.id === id.old)).toMatchObject({eventType: 'a', payload: {n: 0}, publishedAt: expect.any(String), failedAt: null})
      // times as stored: microseconds on PostgreSQL and MySQL, not a driver's millisecond Date
      const digits = target.dialect === 'sqlite' ? 3 : 6
      for (const line of lines) expect(line.createdAt).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{${digits}}Z$`))
      expect(await ids(db, names, 'outbox')).toEqual(kept().filter((i) => i !== id.publishedRecently))
    })

    // one id, one event: an id the archive holds already (archived, then written again by a
    // producer with its own ids) takes the newer copy; before, the batch failed on the
    // archive's primary key on every rerun and nothing after it was ever archived
    for (const withFile of [false, true]) {
      it(`an id already in the archive takes the newer copy, the rest of its batch moves (${withFile ? 'with' : 'without'} --to-file)`, async () => {
        await reset()
        await insertRows(db, names, now, [{id: id.old, type: 'stale', created: -90 * DAY, published: -89 * DAY, payload: {stale: true}}], 'archive')
        const file = join(dir, `again-${target.dialect}-${withFile}.jsonl`)
        const r = await archive(db, names, {before: cutoff(), batch: 10, ...(withFile && {toFile: file})})
        expect(r.archived).toBe(3 + BULK)
        expect(await ids(db, names, 'archive')).toEqual(moved())
        expect(await ids(db, names, 'outbox')).toEqual(kept())
        const [row] = await db.query(sql`SELECT event_type, payload FROM ${raw(db.dialect.render.table(names, 'archive'))} WHERE id = ${id.old}`)
        expect(row.event_type).toBe('a')
        expect(typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload).toEqual({n: 0})
        if (withFile) expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(3 + BULK)
      })
    }

    it('--to-file says when it appends to a file that holds lines already', async () => {
      await reset()
      const file = join(dir, `append-${target.dialect}.jsonl`)
      writeFileSync(file, '{"earlier":"run"}\n')
      const r = cli(['archive', ...flags(), '--before', cutoff(), '--to-file', file, '--yes'])
      expect(r.status).toBe(0)
      expect(r.stderr).toContain(`appending to ${file} (18 bytes there already)`)
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1 + 3 + BULK)
    })

    it('a missing archive table is refused up front, by name: no dry-run count, no file, nothing changed', async () => {
      await reset()
      const snap = await snapshot(db, names)
      const file = join(dir, `missing-${target.dialect}.jsonl`)
      for (const args of [['--dry-run'], ['--yes', '--to-file', file]]) {
        const r = cli(['archive', '--url', target.url, '--table', names.outbox, '--archive-table', `${names.archive}_nope`, '--before', cutoff(), ...args])
        expect(r.status, args.join(' ')).toBe(2)
        expect(r.stderr.trim().split('\n')).toHaveLength(1)
        expect(r.stderr).toContain(`the archive table ${names.archive}_nope does not exist`)
      }
      expect(() => readFileSync(file)).toThrow()
      expect(await snapshot(db, names)).toBe(snap)
      // --delete needs no archive table
      expect(cli(['archive', '--url', target.url, '--table', names.outbox, '--archive-table', `${names.archive}_nope`, '--before', cutoff(), '--delete', '--dry-run']).status).toBe(0)
    })

    it('the CLI refuses without --yes off a terminal and bad input (exit 2), changing nothing', async () => {
      await reset()
      const snap = await snapshot(db, names)
      for (const args of [['--before', '30d'], ['--yes'], ['--before', 'last month', '--yes'], ['--before', '30d', '--min-published-age', '1', '--yes']]) {
        const r = cli(['archive', ...flags(), ...args])
        expect(r.status, args.join(' ')).toBe(2)
        expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1)
      }
      const dry = cli(['archive', ...flags(), '--before', cutoff(), '--dry-run', '--json'])
      expect(JSON.parse(dry.stdout)).toMatchObject({dryRun: true, wouldArchive: 3 + BULK})
      expect(JSON.parse(dry.stdout)).not.toHaveProperty('archived')
      expect(await snapshot(db, names)).toBe(snap)
      const done = cli(['archive', ...flags(), '--before', cutoff(), '--yes', '--json'])
      expect(done.status).toBe(0)
      const shared = (o: object) => Object.keys(o).filter((k) => !['dryRun', 'wouldArchive', 'archived', 'batches', 'interrupted'].includes(k)).sort()
      expect(shared(JSON.parse(done.stdout))).toEqual(shared(JSON.parse(dry.stdout)))
      expect(JSON.parse(done.stdout)).toMatchObject({dryRun: false, archived: 3 + BULK})
    })

    it('killed between the archive insert and the delete of a batch: every row in exactly one table', async () => {
      await reset()
      const all = [...Object.values(id), ...bulk].sort()
      const r = cli(['archive', ...flags(), '--before', cutoff(), '--batch', '5', '--yes'], {env: {OUTBOX_FAILPOINTS: 'archive.mid-batch=kill@3'}})
      expect(r.status).toBe(null) // SIGKILL
      expect(r.stderr).toContain('outbox-failpoint archive.mid-batch')
      await exactlyOnce(all, 10)
      // a rerun finishes the job
      expect(cli(['archive', ...flags(), '--before', cutoff(), '--yes']).status).toBe(0)
      expect(await ids(db, names, 'archive')).toEqual(moved())
    })

    it('killed from outside at an arbitrary point of a long run: nothing lost, nothing doubled', async () => {
      await reset(600)
      const all = [...Object.values(id), ...bulk].sort()
      const run = cliAsync(['archive', ...flags(), '--before', cutoff(), '--batch', '3', '--yes'])
      // wait until some batches have committed, then SIGKILL mid-run
      for (let i = 0; i < 400 && (await ids(db, names, 'archive')).length < 30; i++) await new Promise((r) => setTimeout(r, 25))
      run.child.kill('SIGKILL')
      const result = await run.done
      expect(result.signal).toBe('SIGKILL')
      const archived = await exactlyOnce(all)
      expect(archived).toBeGreaterThan(0)
      expect(archived).toBeLessThan(603)
    })

    async function exactlyOnce(all: string[], archivedExactly?: number): Promise<number> {
      const archived = await inExactlyOneTable(db, names, all)
      if (archivedExactly !== undefined) expect(archived).toBe(archivedExactly)
      return archived
    }

    async function rowsOf(list: string[], which: 'outbox' | 'archive' = 'outbox') {
      const {raw, sql, join: joinSql} = await import('../../dialects/index.js')
      const cols = 'id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at, published_at, attempts, lease_owner, lease_until, last_error, failed_at'
      return sql`SELECT ${raw(cols)} FROM ${raw(db.dialect.render.table(names, which))} WHERE id IN (${joinSql(list.map((i) => sql`${i}`))}) ORDER BY id`
    }
  })
}
