// The batch loop alone (src/ops/batches.ts), on a real SQLite database: a small batch step
// pages through a table of numbered rows after the cursor and marks each batch done in its own
// transaction, as archive and replay batches do with events.
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest'
import {sql} from '../../dialects/index.js'
import type {BatchPlan} from '../../dialects/batches.js'
import {openDb, type Db} from '../../src/db/index.js'
import {batchLoop, batchTransaction, type BatchDone, type BatchOptions, type Progress} from '../../src/ops/batches.js'
import type {Cursor} from '../../src/ops/query.js'
import {sqliteUrl} from '../helpers/targets.js'

let db: Db
const statements: string[] = []

/** The same Db, every statement outside a batch's transaction recorded by its text. */
function recorded(base: Db, plan: BatchPlan = base.dialect.batches.plan): Db {
  const record = (statement: Parameters<Db['query']>[0]) => statements.push(base.dialect.render.compile(statement).text)
  return {
    ...base,
    dialect: {...base.dialect, batches: {...base.dialect.batches, plan}},
    query: (statement, options) => (record(statement), base.query(statement, options)),
    execute: (statement, options) => (record(statement), base.execute(statement, options)),
  }
}

async function checkpointPages(): Promise<number> {
  const [row] = await db.query(sql`PRAGMA wal_autocheckpoint`)
  return Number(Object.values(row)[0])
}

async function doneRows(): Promise<number[]> {
  return (await db.query<{k: number}>(sql`SELECT k FROM items WHERE done = 1 ORDER BY k`)).map((row) => Number(row.k))
}

interface StepLog {
  /** the cursor each batch was given */
  cursors: (Cursor | undefined)[]
  /** wal_autocheckpoint as each batch saw it */
  pages: number[]
}

/** The next `size` rows after the cursor, marked done; `fail` throws inside batch n's transaction (1-based), after its change. */
function step(target: Db, size: number, log: StepLog, options: {fail?: number; keepCursor?: boolean} = {}) {
  return (cursor: Cursor | undefined): Promise<BatchDone> =>
    batchTransaction(target, async (tx) => {
      log.cursors.push(cursor)
      log.pages.push(Number(Object.values((await tx.query(sql`PRAGMA wal_autocheckpoint`))[0])[0]))
      const after = cursor ? Number(cursor.id) : 0
      const rows = await tx.query<{k: number}>(sql`SELECT k FROM items WHERE k > ${after} ORDER BY k LIMIT ${size}`)
      if (rows.length === 0) return {seen: 0, changed: 0}
      const last = Number(rows[rows.length - 1].k)
      const changed = await tx.execute(sql`UPDATE items SET done = 1 WHERE k > ${after} AND k <= ${last} AND k % 5 <> 0`)
      if (log.cursors.length === options.fail) throw new Error(`batch ${options.fail} failed`)
      return {seen: rows.length, changed, cursor: options.keepCursor === false ? undefined : {at: `t${last}`, id: String(last)}}
    })
}

async function fill(count: number): Promise<void> {
  await db.execute(sql`DELETE FROM items`)
  for (let k = 1; k <= count; k++) await db.execute(sql`INSERT INTO items (k, done) VALUES (${k}, 0)`)
}

beforeAll(async () => {
  db = await openDb(sqliteUrl())
  await db.execute(sql`CREATE TABLE items (k INTEGER PRIMARY KEY, done INTEGER NOT NULL)`)
})
afterAll(async () => db.close())
beforeEach(async () => {
  statements.length = 0
  await db.execute(sql`PRAGMA wal_autocheckpoint = 1234`)
})

describe('the batch loop', () => {
  it('goes batch after batch from each cursor, reports progress, and stops on a short batch', async () => {
    await fill(7)
    const log: StepLog = {cursors: [], pages: []}
    const reported: Progress[] = []
    const progress = await batchLoop(db, {size: 3, onProgress: (p) => reported.push(p)}, step(db, 3, log))
    // rows 5 is left alone by the step: seen 7, changed 6
    expect(progress).toEqual({seen: 7, changed: 6, batches: 3})
    expect(reported).toEqual([
      {seen: 3, changed: 3, batches: 1},
      {seen: 6, changed: 5, batches: 2},
      {seen: 7, changed: 6, batches: 3},
    ])
    expect(log.cursors).toEqual([undefined, {at: 't3', id: '3'}, {at: 't6', id: '6'}])
    expect(await doneRows()).toEqual([1, 2, 3, 4, 6, 7])
  })

  it('stops on an empty batch, and on one that gives no cursor to go on from', async () => {
    await fill(6)
    const full: StepLog = {cursors: [], pages: []}
    expect(await batchLoop(db, {size: 3}, step(db, 3, full))).toEqual({seen: 6, changed: 5, batches: 2})
    expect(full.cursors, 'the third batch found nothing').toHaveLength(3)
    await fill(6)
    const lost: StepLog = {cursors: [], pages: []}
    expect(await batchLoop(db, {size: 3}, step(db, 3, lost, {keepCursor: false}))).toEqual({seen: 3, changed: 3, batches: 1})
    expect(lost.cursors).toHaveLength(1)
  })

  it('honours the signal between batches: the batch in flight commits, no new one starts', async () => {
    await fill(9)
    const controller = new AbortController()
    const log: StepLog = {cursors: [], pages: []}
    const options: BatchOptions = {size: 3, signal: controller.signal, onProgress: () => controller.abort()}
    expect(await batchLoop(db, options, step(db, 3, log))).toEqual({seen: 3, changed: 3, batches: 1, interrupted: true})
    expect(await doneRows()).toEqual([1, 2, 3])
    // aborted before the first batch: none runs
    const none: StepLog = {cursors: [], pages: []}
    expect(await batchLoop(db, {size: 3, signal: controller.signal}, step(db, 3, none))).toEqual({seen: 0, changed: 0, batches: 0, interrupted: true})
    expect(none.cursors).toEqual([])
  })

  it('holds the run setting during the batches and puts back the value it found, after a failing batch too', async () => {
    const setting = db.dialect.batches.plan.runSetting!
    await fill(7)
    const log: StepLog = {cursors: [], pages: []}
    await batchLoop(recorded(db), {size: 3}, step(db, 3, log))
    expect(log.pages).toEqual([setting.during, setting.during, setting.during])
    expect(await checkpointPages()).toBe(1234)
    const settle = db.dialect.render.compile(setting.settle!).text
    expect(statements.at(-1), 'settles once the setting is back').toBe(settle)

    // a run that committed no batch has nothing of its own to settle
    await db.execute(sql`DELETE FROM items`)
    statements.length = 0
    expect((await batchLoop(recorded(db), {size: 3}, step(db, 3, {cursors: [], pages: []}))).batches).toBe(0)
    expect(statements).not.toContain(settle)
    expect(await checkpointPages()).toBe(1234)

    await fill(7)
    statements.length = 0
    const failing: StepLog = {cursors: [], pages: []}
    await expect(batchLoop(recorded(db), {size: 3}, step(db, 3, failing, {fail: 2}))).rejects.toThrow('batch 2 failed')
    expect(await checkpointPages()).toBe(1234)
    expect(statements, 'a failed run settles nothing').not.toContain(settle)
    expect(await doneRows(), 'batch 1 committed, batch 2 rolled back').toEqual([1, 2, 3])
  })

  it('with relaxed commits: each batch relaxes first, one flush follows the last batch, none when no batch committed or one failed', async () => {
    const relaxed = {relax: sql`UPDATE items SET done = done`, flush: sql`SELECT 'flushed' AS flushed`}
    const plan = {...db.dialect.batches.plan, relaxedCommit: relaxed}
    const flush = db.dialect.render.compile(relaxed.flush).text
    await fill(7)
    const target = recorded(db, plan)
    const transactions: unknown[] = []
    const counted: Db = {...target, transaction: (fn, options) => (transactions.push(options?.first), target.transaction(fn, options))}
    expect((await batchLoop(counted, {size: 3}, step(counted, 3, {cursors: [], pages: []}))).batches).toBe(3)
    expect(transactions).toEqual([relaxed.relax, relaxed.relax, relaxed.relax])
    expect(statements.filter((text) => text === flush)).toHaveLength(1)

    await db.execute(sql`DELETE FROM items`)
    statements.length = 0
    expect((await batchLoop(counted, {size: 3}, step(counted, 3, {cursors: [], pages: []}))).batches).toBe(0)
    expect(statements).not.toContain(flush)

    await fill(7)
    statements.length = 0
    await expect(batchLoop(counted, {size: 3}, step(counted, 3, {cursors: [], pages: []}, {fail: 2}))).rejects.toThrow('batch 2 failed')
    expect(statements).not.toContain(flush)
  })
})
