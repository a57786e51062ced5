// How archive and replay batches commit: on PostgreSQL each batch commits without waiting
// for the WAL flush and one durable commit after the last batch flushes them all; elsewhere
// batches commit as usual. Checked on the real servers through a Db that records statements.
import {copyFileSync, mkdtempSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw as rawTable, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db, type Queryable} from '../../src/db/index.js'
import {sqlitePath} from '../../src/db/url.js'
import {archive} from '../../src/ops/archive.js'
import {databaseNow} from '../../src/ops/query.js'
import {replay} from '../../src/ops/replay.js'
import {clear, insertRows} from '../helpers/rows.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()

interface Step {
  text: string
  /** sent as a kept server-side prepared statement */
  prepare?: boolean
  /** index of the transaction the statement ran in; undefined outside any */
  tx?: number
}

/** The same Db, with every statement's text and transaction recorded in order. */
function recording(db: Db): {db: Db; steps: Step[]; commits: number[]} {
  const steps: Step[] = []
  const commits: number[] = []
  let transactions = 0
  const record = (target: Queryable, tx?: number): Queryable => ({
    query: (statement, options) => (steps.push({text: db.dialect.render.compile(statement).text, tx, prepare: options?.prepare}), target.query(statement, options)),
    execute: (statement, options) => (steps.push({text: db.dialect.render.compile(statement).text, tx, prepare: options?.prepare}), target.execute(statement, options)),
  })
  const wrapped: Db = {
    ...db,
    ...record(db),
    transaction: async (fn, options) => {
      const n = transactions++
      if (options?.first) steps.push({text: db.dialect.render.compile(options.first).text, tx: n})
      const result = await db.transaction((tx) => fn(record(tx, n)), options)
      commits.push(steps.length) // statements recorded before this commit
      return result
    },
  }
  return {db: wrapped, steps, commits}
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`archive and replay batch commits on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames

    async function seed(count: number) {
      await clear(db, names)
      const now = await databaseNow(db)
      await insertRows(db, names, now, Array.from({length: count}, (_, i) => ({created: -5 * 86_400 + i, published: -4 * 86_400, attempts: 1})))
    }

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `bc${target.dialect.slice(0, 2)}`, {inbox: false, archive: true}))
    })
    afterAll(() => closeTables(db, names))

    for (const op of ['archive', 'replay'] as const) {
      it(`${op}: every batch is one transaction; PostgreSQL relaxes each commit and flushes once after the last`, async () => {
        await seed(25)
        const r = recording(db)
        const result =
          op === 'archive' ? await archive(r.db, names, {before: '1d', batch: 10}) : await replay(r.db, names, {since: '30d', batch: 10})
        expect(op === 'archive' ? (result as {archived: number}).archived : (result as {replayed: number}).replayed).toBe(25)
        expect(result.batches).toBe(3)
        const inBatches = r.steps.filter((s) => s.tx !== undefined)
        const batchIds = [...new Set(inBatches.map((s) => s.tx))]
        expect(batchIds).toHaveLength(3)
        const relaxed = db.dialect.batches.plan.relaxedCommit
        if (db.dialect.name !== 'postgres') {
          expect(relaxed).toBeUndefined()
          return
        }
        const relax = db.dialect.render.compile(relaxed!.relax).text
        const flush = db.dialect.render.compile(relaxed!.flush).text
        for (const id of batchIds) expect(inBatches.find((s) => s.tx === id)?.text, `batch ${id} starts relaxed`).toBe(relax)
        // the one statement that does a batch's work has the same text from the second batch on: kept prepared
        const work = inBatches.filter((s) => s.text !== relax)
        expect(work).toHaveLength(3)
        for (const s of work) expect(s.prepare, 'the batch statement is a kept prepared statement').toBe(true)
        expect(work[1].text).toBe(work[2].text)
        const flushes = r.steps.map((s, i) => ({...s, i})).filter((s) => s.text === flush)
        expect(flushes).toHaveLength(1)
        expect(flushes[0].tx, 'the flush is a transaction of its own').toBeUndefined()
        expect(flushes[0].i, 'after the last batch committed').toBeGreaterThanOrEqual(r.commits[r.commits.length - 1])
      })
    }

    it('a transaction\'s `first` statement runs inside it: rolled back with it, committed with it', async () => {
      await seed(2)
      const table = rawTable(db.dialect.render.table(names, 'outbox'))
      const first = sql`UPDATE ${table} SET attempts = 7`
      const attempts = async (q: Queryable = db) => Number((await q.query<{n: number}>(sql`SELECT SUM(attempts) AS n FROM ${table}`))[0].n)
      await expect(db.transaction(async () => Promise.reject(new Error('undo')), {first})).rejects.toThrow('undo')
      expect(await attempts()).toBe(2)
      const seen = await db.transaction((tx) => attempts(tx), {first})
      expect(seen, 'the body sees what first did').toBe(14)
      expect(await attempts()).toBe(14)
    })

    it.skipIf(target.dialect !== 'sqlite')('SQLite: the run checkpoints the WAL less often and puts the setting back, also when a batch fails', async () => {
      const setting = db.dialect.batches.plan.runSetting!
      const read = async (q: Queryable = db) => Number(Object.values((await q.query(setting.read))[0])[0])
      await db.execute(setting.set(1234))
      try {
        await seed(25)
        let during = 0
        const watching: Db = {...db, transaction: async (fn, options) => db.transaction(async (tx) => ((during = await read(tx)), fn(tx)), options)}
        expect((await replay(watching, names, {since: '30d', batch: 10})).replayed).toBe(25)
        expect(during).toBe(setting.during)
        expect(await read()).toBe(1234)
        // a batch that fails: the setting is put back all the same
        await seed(25)
        let n = 0
        const failing: Db = {...db, transaction: async (fn, options) => (++n === 2 ? Promise.reject(new Error('batch 2 failed')) : db.transaction(fn, options))}
        await expect(archive(failing, names, {before: '1d', batch: 10})).rejects.toThrow('batch 2 failed')
        expect(await read()).toBe(1234)
      } finally {
        await db.execute(setting.set(1000))
      }
    })

    // The run copies its WAL pages into the database file itself (a PASSIVE checkpoint at the
    // end): otherwise up to 10,000 pages would wait for the next writer's commit (a relay's) to
    // pay for. Seen from outside: a copy of the database file alone, without its WAL, already
    // holds every replayed row.
    it.skipIf(target.dialect !== 'sqlite')('SQLite: after a run the database file holds every batch, nothing is left in the WAL for the next writer', async () => {
      await seed(25)
      expect((await replay(db, names, {since: '30d', batch: 10})).replayed).toBe(25)
      const copy = join(mkdtempSync(join(tmpdir(), 'outbox-settle-')), 'copy.db')
      copyFileSync(sqlitePath(target.url), copy)
      const alone = await openDb(`sqlite:${copy}`)
      try {
        const [row] = await alone.query<{n: number}>(sql`SELECT COUNT(*) AS n FROM ${rawTable(db.dialect.render.table(names, 'outbox'))} WHERE published_at IS NULL AND attempts = 0`)
        expect(Number(row.n)).toBe(25)
      } finally {
        await alone.close()
      }
    })

    // A batch picks its rows again by (created_at, id) range where that is cheaper than an id
    // list. Whatever plan the server takes for that (a full scan on a small table), it must not
    // wait on a row outside the selection that another session holds: a producer's fresh row
    // in an open transaction, a relay's claim. PostgreSQL only: on MariaDB the batch's own
    // SELECT ... FOR UPDATE waits on such a row when the server scans the whole (small) table,
    // with an id list as much as with a range (known, see README); its UPDATE by range does not
    // (READ COMMITTED reads a locked row's last committed version), and its DELETE goes by id.
    it.skipIf(target.dialect !== 'postgres')('never waits on a locked row outside the selection (a producer\'s open insert)', async () => {
      await clear(db, names)
      const now = await databaseNow(db)
      await insertRows(db, names, now, Array.from({length: 30}, (_, i) => ({created: -5 * 86_400 + i, published: -4 * 86_400, attempts: 1})))
      const table = rawTable(db.dialect.render.table(names, 'outbox'))
      const bounded = <T>(work: Promise<T>) =>
        Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('waited on a lock outside the selection')), 20_000))])
      await db.transaction(async (producer) => {
        await insertRows({...db, transaction: (fn) => fn(producer)} as Db, names, now, [{created: 0}]) // uncommitted, created now
        expect((await bounded(replay(db, names, {since: '30d', until: '1d', batch: 10}))).replayed).toBe(30)
        await db.execute(sql`UPDATE ${table} SET published_at = created_at WHERE created_at < ${db.dialect.render.timeParam(new Date(now.getTime() - 86_400_000))}`)
        expect((await bounded(archive(db, names, {before: '1d', minPublishedAgeMs: 0, batch: 10}))).archived).toBe(30)
      })
    }, 60_000)

    it.skipIf(target.dialect !== 'postgres')('the relaxed setting holds for the batch transaction only, and the flush commit waits for the disk', async () => {
      const relaxed = db.dialect.batches.plan.relaxedCommit!
      // as batches pass it: the transaction's first statement, sent with BEGIN
      const inside = await db.transaction(async (tx) => (await tx.query<{s: string}>(sql`SELECT current_setting('synchronous_commit') AS s`))[0].s, {first: relaxed.relax})
      expect(inside).toBe('off')
      // the same pooled session afterwards (pool of 4, but SET LOCAL never outlives its transaction)
      const after = await db.transaction(async (tx) => (await tx.query<{s: string}>(sql`SELECT current_setting('synchronous_commit') AS s`))[0].s)
      expect(after).toBe('on')
      // the flush gets a transaction id, so its commit is a WAL flush through every commit before it
      const [row] = await db.query<{flushed_through: number | string}>(relaxed.flush)
      expect(Number(row.flushed_through)).toBeGreaterThan(0)
    })
  })
}
