// `outbox archive` on a partitioned outbox, on both servers: whole partitions taken out and
// dropped (or moved to the archive), partitions holding unpublished, failed or recently
// published events held and named, the rest in batches; --dry-run's plan; and a real SIGKILL
// between the detach and the drop, and between the copy and the drop, finished by the next run.
import {readFileSync} from 'node:fs'
import Ajv from 'ajv'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {archive} from '../../src/ops/archive.js'
import {listPartitions} from '../../src/ops/partitions.js'
import {databaseNow} from '../../src/ops/query.js'
import {initPlan} from '../../src/schema/init.js'
import {cli} from '../helpers/cli.js'
import {ids, insertRows, snapshot, type RowSpec} from '../helpers/rows.js'
import {dropTables, targets, uniqueTables} from '../helpers/targets.js'

const DAY = 86_400
const matrix = await targets(['postgres', 'mysql'])
const schema = new Ajv({strict: true, allowUnionTypes: true, validateFormats: false}).compile(
  JSON.parse(readFileSync(new URL('../../schemas/output/archive.schema.json', import.meta.url), 'utf8')),
)

for (const target of matrix) {
  describe.skipIf(!target.available)(`archive by partition on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let now: Date
    let today: number
    const made: TableNames[] = []
    const flags = () => ['--url', target.url, '--table', names.outbox, '--archive-table', names.archive]
    const day = (d: number) => (today - now.getTime()) / 1000 + d * DAY // seconds from now to the start of day d (0: today)
    const cutoff = () => new Date(today - 5 * DAY * 1000 + 12 * 3_600_000).toISOString() // noon of day -5
    const partitionOf = (d: number) => db.dialect.ddl.partitioning!.partitionName(names, `p${new Date(today + d * DAY * 1000).toISOString().slice(0, 10).replaceAll('-', '')}`)

    /** daily ranges from day -10 (plus a week ahead), the DEFAULT / MAXVALUE partition, an archive table */
    async function fresh(): Promise<void> {
      names = uniqueTables(`ap${target.dialect.slice(0, 2)}`)
      made.push(names)
      for (const s of initPlan(db.dialect, names, {inbox: false, archive: true, partitionBy: 'day'}, new Date(today - 10 * DAY * 1000)).filter((s) => !s.repairOnly)) {
        await db.execute(sql`${raw(s.sql.replace(/;\s*$/, ''))}`)
      }
    }

    // day -10: all archivable; -9: one unpublished; -8: one failed; -7: empty; -6: published an
    // hour ago; -5: before and after the noon cutoff (a range that ends after it); today: pending
    const ROWS: Record<string, RowSpec[]> = {}
    async function seed(): Promise<Record<string, string[]>> {
      const old = (d: number, i: number): RowSpec => ({type: `t${i % 2}`, created: day(d) + 60 + i, published: day(d) + 120 + i})
      Object.assign(ROWS, {
        d10: [0, 1, 2, 3, 4].map((i) => old(-10, i)),
        d9: [...[0, 1, 2].map((i) => old(-9, i)), {created: day(-9) + 30}],
        d8: [...[0, 1].map((i) => old(-8, i)), {created: day(-8) + 30, failed: day(-8) + 40, attempts: 5}],
        d6: [0, 1, 2, 3].map((i) => ({...old(-6, i), published: -3600})),
        d5: [{...old(-5, 0)}, {created: day(-5) + 13 * 3600, published: day(-5) + 13 * 3600 + 5}],
        d0: [{created: -60}],
      })
      const out: Record<string, string[]> = {}
      for (const [k, rows] of Object.entries(ROWS)) out[k] = await insertRows(db, names, now, rows)
      return out
    }
    const inRetired = async (): Promise<string[]> => {
      const rows = await db.query(db.dialect.ddl.partitioning!.retention.retired(names))
      const out: string[] = []
      // a marked partition still attached holds outbox rows, counted there
      for (const r of rows.filter((r) => r.state !== 'attached')) out.push(...(await ids(db, {...names, outbox: String(r.name)})))
      return out
    }
    /** every id in exactly one of outbox, archive and retired tables */
    async function placed(all: string[]): Promise<{outbox: string[]; archive: string[]; retired: string[]}> {
      const where = {outbox: await ids(db, names), archive: await ids(db, names, 'archive'), retired: await inRetired()}
      const every = [...where.outbox, ...where.archive, ...where.retired].sort()
      expect(every).toEqual([...all].sort())
      return where
    }
    const listed = async () => (await listPartitions(db, names)).partitions.map((p) => p.name)

    beforeAll(async () => {
      db = await openDb(target.url)
      now = await databaseNow(db)
      today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
    })
    afterAll(async () => {
      for (const n of made) {
        for (const r of await db.query(db.dialect.ddl.partitioning!.retention.retired(n)).catch(() => [])) {
          await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table({...n, outbox: String(r.name)}, 'outbox'))}`)
        }
        await dropTables(db, n)
      }
      await db.close()
    })

    it('--dry-run plans whole partitions, held ones with why, the rest in batches; changes nothing', async () => {
      await fresh()
      await seed()
      const snap = await snapshot(db, names)
      const plan = await archive(db, names, {before: cutoff(), dryRun: true, delete: true})
      expect(plan.partitions).toMatchObject({
        detach: target.dialect === 'postgres' ? 'detach' : 'exchange',
        whole: [{name: partitionOf(-10), rows: 5}, {name: partitionOf(-7), rows: 0}],
        held: [
          {name: partitionOf(-9), unpublished: 1, failed: 0, recentlyPublished: 0, reason: 'holds 1 unpublished'},
          {name: partitionOf(-8), unpublished: 0, failed: 1, reason: 'holds 1 failed'},
          {name: partitionOf(-6), recentlyPublished: 4, reason: expect.stringMatching(/^holds 4 published after /)},
        ],
        unfinished: [],
        batchedRows: 3 + 2 + 1,
      })
      expect(plan.wouldArchive).toBe(5 + 6)
      expect(await snapshot(db, names)).toBe(snap)
      const text = cli(['archive', ...flags(), '--before', cutoff(), '--delete', '--dry-run'])
      expect(text.status, text.stderr).toBe(0)
      expect(text.stdout).toContain('partitions: 2 to take out whole, 3 held; 6 row(s) left to the batches.')
      expect(text.stdout).toContain(`held: ${partitionOf(-9)} is never dropped while it holds 1 unpublished`)
      const json = cli(['archive', ...flags(), '--before', cutoff(), '--delete', '--dry-run', '--json'])
      expect(schema(JSON.parse(json.stdout)), JSON.stringify(schema.errors)).toBe(true)
    })

    for (const mode of ['delete', 'move'] as const) {
      it(`--${mode === 'delete' ? 'delete' : 'move (no --delete)'}: whole partitions go, held ones stay, their eligible rows in batches`, async () => {
        await fresh()
        const id = await seed()
        const all = Object.values(id).flat()
        const r = cli(['archive', ...flags(), '--before', cutoff(), '--yes', '--json', ...(mode === 'delete' ? ['--delete'] : [])])
        expect(r.status, r.stderr).toBe(0)
        const out = JSON.parse(r.stdout)
        expect(schema(out), JSON.stringify(schema.errors)).toBe(true)
        expect(out).toMatchObject({archived: 11, partitions: {retired: [{name: partitionOf(-10), rows: 5}, {name: partitionOf(-7), rows: 0}], batchedRows: 6, restored: []}})
        expect(out.partitions.held.map((h: {name: string}) => h.name)).toEqual([partitionOf(-9), partitionOf(-8), partitionOf(-6)])
        const names_ = await listed()
        expect(names_).not.toContain(partitionOf(-10))
        expect(names_).not.toContain(partitionOf(-7))
        expect(names_).toContain(partitionOf(-9))
        const kept = [id.d9[3], id.d8[2], ...id.d6, id.d5[1], ...id.d0].sort()
        if (mode === 'delete') {
          expect(await ids(db, names)).toEqual(kept)
          expect(await ids(db, names, 'archive')).toEqual([])
        } else {
          const where = await placed(all)
          expect(where.outbox).toEqual(kept)
          expect(where.retired).toEqual([])
        }
      })
    }

    for (const [point, mode] of [['archive.partition-detached', 'delete'], ['archive.partition-detached', 'move'], ['archive.partition-copied', 'move']] as const) {
      it(`SIGKILL at ${point} (${mode}): each event in one place, marked; the next run finishes it`, async () => {
        await fresh()
        const id = await seed()
        const all = Object.values(id).flat()
        const args = ['archive', ...flags(), '--before', cutoff(), '--yes', ...(mode === 'delete' ? ['--delete'] : [])]
        const killed = cli(args, {env: {OUTBOX_FAILPOINTS: `${point}=kill`}})
        expect(killed.status).toBe(null)
        expect(killed.stderr).toContain(`outbox-failpoint ${point}`)
        const crashed = await placed(all)
        expect(crashed.retired.sort()).toEqual([...id.d10].sort()) // taken out, not dropped: in the retired table only
        expect(crashed.archive).toEqual([])
        // PostgreSQL detached it; MySQL exchanged its rows out and left it, empty
        if (target.dialect === 'postgres') expect(await listed()).not.toContain(partitionOf(-10))
        const plan = await archive(db, names, {before: cutoff(), dryRun: true, delete: mode === 'delete'})
        expect(plan.partitions!.unfinished).toMatchObject([{partition: partitionOf(-10), mode, state: 'detached', rows: 5}])
        const again = cli([...args, '--json'])
        expect(again.status, again.stderr).toBe(0)
        expect(JSON.parse(again.stdout).partitions.finished).toMatchObject([{partition: partitionOf(-10), rows: 5}])
        const done = await placed(mode === 'delete' ? all.filter((i) => !id.d10.includes(i) && ![...id.d9.slice(0, 3), ...id.d8.slice(0, 2), id.d5[0]].includes(i)) : all)
        expect(done.retired).toEqual([])
        if (mode === 'move') expect(done.archive).toEqual([...id.d10, ...id.d9.slice(0, 3), ...id.d8.slice(0, 2), id.d5[0]].sort())
      })
    }

    it('rows that changed after the check (a replay) send the taken-out partition back whole', async () => {
      await fresh()
      const id = await seed()
      const part = db.dialect.ddl.partitioning!.retention
      const way = part.detachWay(true)
      for (const s of part.detach(names, partitionOf(-10), 'delete', way)) await db.execute(s)
      const retired = part.retiredTable(names, partitionOf(-10))
      await db.execute(sql`UPDATE ${raw(db.dialect.render.table({...names, outbox: retired}, 'outbox'))} SET published_at = NULL WHERE id = ${id.d10[0]}`)
      const r = await archive(db, names, {before: cutoff(), delete: true})
      expect(r.partitions).toMatchObject({restored: [partitionOf(-10)], finished: []})
      expect(await listed()).toContain(partitionOf(-10))
      expect(await inRetired()).toEqual([])
      expect(await ids(db, names)).toContain(id.d10[0])
      // the next run holds it, with why
      const plan = await archive(db, names, {before: cutoff(), dryRun: true, delete: true})
      expect(plan.partitions!.held[0]).toMatchObject({name: partitionOf(-10), reason: 'holds 1 unpublished'})
    })

    // MySQL's EXCHANGE leaves the partition in place, empty, until its DROP PARTITION; PostgreSQL's
    // DETACH sends such a row to the DEFAULT partition, which refused the partition's way back
    const takeOut = async (mode: 'delete' | 'move') => {
      const part = db.dialect.ddl.partitioning!.retention
      for (const s of part.detach(names, partitionOf(-10), mode, part.detachWay(true))) await db.execute(s)
      return raw(db.dialect.render.table({...names, outbox: part.retiredTable(names, partitionOf(-10))}, 'outbox'))
    }
    const late = () => insertRows(db, names, now, [{type: 'late', created: day(-10) + 500}])

    it('a row written into a taken-out range before the drop (a replay, a late writer) stays in the outbox', async () => {
      await fresh()
      const id = await seed()
      await takeOut('delete')
      const [replayed] = await late()
      const r = await archive(db, names, {before: cutoff(), delete: true})
      expect(r.partitions).toMatchObject({finished: [{partition: partitionOf(-10), rows: 5}], restored: []})
      expect(await ids(db, names)).toContain(replayed)
      for (const gone of id.d10) expect(await ids(db, names)).not.toContain(gone)
      expect(await inRetired()).toEqual([])
      if (target.dialect === 'mysql') {
        expect(r.partitions!.refilled).toEqual([partitionOf(-10)])
        expect(await listed()).toContain(partitionOf(-10))
      }
    })

    it('a taken-out partition put back while its range received a row meanwhile: both kept, the range back in place', async () => {
      await fresh()
      const id = await seed()
      const retired = await takeOut('delete')
      await db.execute(sql`UPDATE ${retired} SET published_at = NULL WHERE id = ${id.d10[0]}`)
      const [replayed] = await late()
      const r = await archive(db, names, {before: cutoff(), delete: true})
      expect(r.partitions).toMatchObject({restored: [partitionOf(-10)], finished: []})
      expect(await listed()).toContain(partitionOf(-10))
      expect(await inRetired()).toEqual([])
      const outbox = await ids(db, names)
      for (const kept of [replayed, id.d10[0]]) expect(outbox).toContain(kept)
      const inRange = await db.query(db.dialect.ddl.partitioning!.stats(names, partitionOf(-10)))
      expect(Number(inRange[0].row_count)).toBeGreaterThanOrEqual(2) // both in the range's own partition
    })

    // MySQL: the table lock before the drop commits the copy, so a kill there leaves the rows in the
    // archive and in the retired table; the rerun copies over the same ids, and drops it
    it('SIGKILL at archive.partition-drop (move): the rerun leaves every event in exactly one place', async () => {
      await fresh()
      const id = await seed()
      const all = Object.values(id).flat()
      const args = ['archive', ...flags(), '--before', cutoff(), '--yes']
      const killed = cli(args, {env: {OUTBOX_FAILPOINTS: 'archive.partition-drop=kill'}})
      expect(killed.status).toBe(null)
      expect(killed.stderr).toContain('outbox-failpoint archive.partition-drop')
      expect((await inRetired()).sort()).toEqual([...id.d10].sort())
      const archived = await ids(db, names, 'archive')
      expect(archived).toEqual(target.dialect === 'mysql' ? [...id.d10].sort() : [])
      const again = cli([...args, '--json'])
      expect(again.status, again.stderr).toBe(0)
      expect(JSON.parse(again.stdout).partitions.finished).toMatchObject([{partition: partitionOf(-10), rows: 5}])
      const done = await placed(all)
      expect(done.retired).toEqual([])
      expect(done.archive).toEqual([...id.d10, ...id.d9.slice(0, 3), ...id.d8.slice(0, 2), id.d5[0]].sort())
      expect(await listed()).not.toContain(partitionOf(-10))
    })

    // LOCK TABLES ... WRITE waits for every transaction that read the outbox, and writers queue behind it
    it.skipIf(target.dialect !== 'mysql')('a transaction holding the outbox: the table lock waits 5 s, the run fails changing nothing, a rerun finishes', async () => {
      await fresh()
      const id = await seed()
      const all = Object.values(id).flat()
      const killed = cli(['archive', ...flags(), '--before', cutoff(), '--yes', '--delete'], {env: {OUTBOX_FAILPOINTS: 'archive.partition-detached=kill'}})
      expect(killed.status).toBe(null)
      const left = await placed(all)
      const other = await openDb(target.url, {poolSize: 1})
      try {
        await other.transaction(async (tx) => {
          await tx.query(sql`SELECT COUNT(*) AS n FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
          await expect(archive(db, names, {before: cutoff(), delete: true})).rejects.toThrow(/lock wait timeout/i)
          expect(await placed(all)).toEqual(left)
        })
      } finally {
        await other.close()
      }
      const again = await archive(db, names, {before: cutoff(), delete: true})
      expect(again.partitions!.finished).toMatchObject([{partition: partitionOf(-10), rows: 5}])
      const gone = [...id.d10, ...id.d9.slice(0, 3), ...id.d8.slice(0, 2), id.d5[0]]
      expect((await placed(all.filter((i) => !gone.includes(i)))).retired).toEqual([])
    })

    it.skipIf(target.dialect !== 'postgres')('without a DEFAULT partition: DETACH PARTITION ... CONCURRENTLY', async () => {
      await fresh()
      await seed()
      await db.execute(sql`DROP TABLE ${raw(db.dialect.render.table({...names, outbox: `${names.outbox}_default`}, 'outbox'))}`)
      const r = await archive(db, names, {before: cutoff(), delete: true})
      expect(r.partitions).toMatchObject({detach: 'detach-concurrently', retired: [{name: partitionOf(-10)}, {name: partitionOf(-7)}]})
      expect(r.archived).toBe(11)
    })

    // a plain DETACH queues every producer behind its lock request: behind a long transaction it
    // gives up (lock_timeout), the partition stays (marked: the next run clears that) and a rerun takes it
    it.skipIf(target.dialect !== 'postgres')('a plain DETACH behind a long transaction gives up; nothing lost, the rerun takes the partition', async () => {
      await fresh()
      const id = await seed()
      const all = Object.values(id).flat()
      const reader = await openDb(target.url, {poolSize: 1})
      try {
        await reader.transaction(async (tx) => {
          await tx.query(sql`SELECT count(*) FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
          await expect(archive(db, names, {before: cutoff(), delete: true})).rejects.toThrow(/lock timeout/)
        })
      } finally {
        await reader.close()
      }
      expect(await listed()).toContain(partitionOf(-10))
      expect((await placed(all)).retired).toEqual([])
      const plan = await archive(db, names, {before: cutoff(), dryRun: true, delete: true})
      expect(plan.partitions!.unfinished).toMatchObject([{partition: partitionOf(-10), state: 'attached'}])
      const r = await archive(db, names, {before: cutoff(), delete: true})
      expect(r.partitions).toMatchObject({retired: [{name: partitionOf(-10), rows: 5}, {name: partitionOf(-7)}]})
      expect(await db.query(db.dialect.ddl.partitioning!.retention.retired(names))).toEqual([])
    }, 180_000)

    // DETACH ... CONCURRENTLY commits its first step, then waits for the outbox's readers; cancelled
    // there, it leaves the partition "detach pending": the next run finalises it and finishes
    it.skipIf(target.dialect !== 'postgres')('a DETACH ... CONCURRENTLY cancelled while it waits: the next run finalises and finishes it', async () => {
      await fresh()
      const id = await seed()
      await db.execute(sql`DROP TABLE ${raw(db.dialect.render.table({...names, outbox: `${names.outbox}_default`}, 'outbox'))}`)
      const reader = await openDb(target.url, {poolSize: 1})
      try {
        let run!: Promise<unknown>
        await reader.transaction(async (tx) => {
          await tx.query(sql`SELECT count(*) FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
          run = archive(db, names, {before: cutoff(), delete: true}).catch((error) => error)
          const detaching = async () => (await db.query(sql`SELECT pid FROM pg_stat_activity WHERE query LIKE 'ALTER TABLE%DETACH PARTITION%CONCURRENTLY' AND wait_event_type = 'Lock'`))[0]
          for (let i = 0; i < 600 && !(await detaching()); i++) await new Promise((r) => setTimeout(r, 50))
          const {pid} = (await detaching()) ?? {}
          expect(pid).toBeDefined()
          await db.query(sql`SELECT pg_cancel_backend(${pid}::int)`)
          expect(String(await run)).toMatch(/cancel/)
        })
      } finally {
        await reader.close()
      }
      const plan = await archive(db, names, {before: cutoff(), dryRun: true, delete: true})
      expect(plan.partitions!.unfinished).toMatchObject([{partition: partitionOf(-10), state: 'pending', rows: 5}])
      const r = await archive(db, names, {before: cutoff(), delete: true})
      expect(r.partitions).toMatchObject({finished: [{partition: partitionOf(-10), rows: 5}], retired: [{name: partitionOf(-7)}]})
      expect(await inRetired()).toEqual([])
      for (const gone of id.d10) expect(await ids(db, names)).not.toContain(gone)
    }, 180_000)
  })
}
