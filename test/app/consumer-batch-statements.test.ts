// What Consumer.handleBatch sends, on every dialect: a batch of new events is one transaction
// holding ONE inbox statement and the effects' own statements, no savepoint; an effect that
// throws rolls that transaction back and the batch runs again with a savepoint per event, the
// failing effect not called again; ids already in the inbox (or twice in the batch) are skipped
// without a savepoint where the dialect returns the ids it inserted, and on MySQL take the
// savepoint way in the same transaction; the inbox rows go in the order of their ids.
// Statements are counted through a wrapped Db.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {Consumer, type BatchItem} from '../../src/consumer.js'
import {uuidv7} from '../../src/core/uuid.js'
import type {Db, Queryable} from '../../src/db/index.js'
import {wrapDb} from '../helpers/wrapped-db.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()

/** The statements each transaction ran, by kind, in order. */
type Log = string[][]

function kindOf(text: string, names: TableNames): string {
  if (/^\s*(SAVEPOINT|RELEASE|ROLLBACK TO)/i.test(text)) return 'savepoint'
  if (text.includes(`${names.outbox}_effects`)) return 'effect'
  if (text.includes(names.inbox)) return /\),\s*\(/.test(text) ? 'inbox-many' : 'inbox-one'
  return text.trim().split(/\s+/)[0]
}

type Statement = Parameters<Queryable['query']>[0]

/** The Db with every statement of every transaction passed to `seen` (the effects write through the same Queryable). */
function watched(db: Db, seen: (statement: Statement) => void): Db {
  return wrapDb(db, {
    transaction: (target) => (fn, options) =>
      target.transaction((q, native) => {
        const tx: Queryable = {
          query: (statement, o) => (seen(statement), q.query(statement, o)),
          execute: (statement, o) => (seen(statement), q.execute(statement, o)),
        }
        return fn(tx, native === q ? tx : native)
      }, options),
  })
}

/** The Db with the kinds of each transaction's statements logged, a list per transaction. */
function logged(db: Db, names: TableNames, log: Log): Db {
  return wrapDb(db, {
    transaction: (target) => (fn, options) => {
      const statements: string[] = []
      log.push(statements)
      return watched(target, (statement) => statements.push(kindOf(statement.chunks.join('?'), names))).transaction(fn, options)
    },
  })
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`Consumer.handleBatch's statements on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let effects: string
    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, 'cbs', {inbox: true, archive: false}))
      effects = `${names.outbox}_effects`
      await db.execute(sql`CREATE TABLE ${raw(effects)} (event_id VARCHAR(64) NOT NULL, note VARCHAR(64) NOT NULL)`)
    })
    afterAll(async () => {
      await db?.execute(sql`DROP TABLE IF EXISTS ${raw(effects)}`).catch(() => {})
      await closeTables(db, names)
    })

    const count = async (table: string, id: string) => {
      const [row] = await db.query<{n: number | string}>(sql`SELECT count(*) AS n FROM ${raw(table)} WHERE event_id = ${id}`)
      return Number(row.n)
    }
    const inbox = () => db.dialect.render.table(names, 'inbox')
    /** A batch of `ids`; calls[i] counts the calls of item i's effect; `fails` throws from that item's effect. */
    function batch(ids: string[], fails?: number) {
      const calls = ids.map(() => 0)
      const items: BatchItem<Queryable>[] = ids.map((id, i) => ({
        event: {id},
        effect: async (tx) => {
          calls[i]++
          await tx.execute(sql`INSERT INTO ${raw(effects)} (event_id, note) VALUES (${id}, ${`call ${calls[i]}`})`)
          if (i === fails) throw new Error('smtp down')
        },
      }))
      return {items, calls}
    }

    it('new events: one transaction, one inbox statement, the effects, no savepoint', async () => {
      const log: Log = []
      const consumer = new Consumer(logged(db, names, log), {consumer: 'c-new', tables: names})
      const ids = [1, 2, 3, 4, 5].map(() => uuidv7())
      const {items, calls} = batch(ids)
      const results = await consumer.handleBatch(items)
      expect(results.map((r) => r.outcome)).toEqual(['applied', 'applied', 'applied', 'applied', 'applied'])
      expect(log).toEqual([['inbox-many', 'effect', 'effect', 'effect', 'effect', 'effect']])
      expect(calls).toEqual([1, 1, 1, 1, 1])
      for (const id of ids) expect([await count(effects, id), await count(inbox(), id)]).toEqual([1, 1])
    })

    it('an effect that throws: the batch again with a savepoint each; the failing effect is called once, the others commit once', async () => {
      const log: Log = []
      const consumer = new Consumer(logged(db, names, log), {consumer: 'c-fail', tables: names})
      const ids = [1, 2, 3, 4, 5].map(() => uuidv7())
      const {items, calls} = batch(ids, 2)
      const results = await consumer.handleBatch(items)
      expect(results.map((r) => r.outcome ?? (r.error as Error).message)).toEqual(['applied', 'applied', 'smtp down', 'applied', 'applied'])
      // the two before it ran in the rolled-back transaction too; the failing one and those after it once
      expect(calls).toEqual([2, 2, 1, 1, 1])
      expect(log).toHaveLength(2)
      expect(log[0]).toEqual(['inbox-many', 'effect', 'effect', 'effect'])
      // each of the four: SAVEPOINT, its inbox row, its effect, RELEASE
      expect(log[1].filter((k) => k === 'savepoint')).toHaveLength(4 * 2)
      expect(log[1].filter((k) => k === 'inbox-one')).toHaveLength(4)
      for (const [i, id] of ids.entries()) expect([await count(effects, id), await count(inbox(), id)]).toEqual(i === 2 ? [0, 0] : [1, 1])
    })

    it('ids already in the inbox and an id twice in the batch are skipped; the others apply once', async () => {
      const log: Log = []
      const consumer = new Consumer(logged(db, names, log), {consumer: 'c-dup', tables: names})
      const seen = uuidv7()
      expect(await consumer.handleBatch(batch([seen, uuidv7()]).items)).toHaveLength(2)
      log.length = 0
      const [a, b] = [uuidv7(), uuidv7()]
      const {items, calls} = batch([a, seen, b, a])
      const results = await consumer.handleBatch(items)
      expect(results.map((r) => r.outcome)).toEqual(['applied', 'duplicate', 'applied', 'duplicate'])
      expect(calls).toEqual([1, 0, 1, 0])
      expect(log).toHaveLength(1)
      // where the inbox statement returns the ids it inserted, no savepoint; on MySQL the
      // duplicate raised and undid the statement: a savepoint each, in the same transaction
      if (db.dialect.events.inboxReturnedId) expect(log[0]).toEqual(['inbox-many', 'effect', 'effect'])
      else expect(log[0]).toEqual(['inbox-many', ...['savepoint', 'inbox-one', 'effect', 'savepoint'], ...['savepoint', 'inbox-one', 'savepoint'], ...['savepoint', 'inbox-one', 'effect', 'savepoint'], ...['savepoint', 'inbox-one', 'savepoint']])
      for (const id of [a, b, seen]) expect([await count(effects, id), await count(inbox(), id)]).toEqual([1, 1])
    })

    it('the inbox rows go in the order of their ids, whatever the order of the batch (one lock order for every consumer)', async () => {
      const sent: (readonly unknown[])[] = []
      const watching = watched(db, (statement) => void (kindOf(statement.chunks.join('?'), names) === 'inbox-many' && sent.push(statement.values)))
      const ids = [1, 2, 3, 4].map(() => uuidv7()) // time-ordered: ascending as made
      const results = await new Consumer(watching, {consumer: 'c-order', tables: names}).handleBatch(batch([...ids].reverse()).items)
      expect(results.map((r) => r.outcome)).toEqual(['applied', 'applied', 'applied', 'applied'])
      expect(sent).toHaveLength(1)
      // the batch came newest first; the statement binds them oldest (lowest id) first
      const positions = ids.map((id) => sent[0].indexOf(id))
      expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]))).toBe(true)
    })

    it('an id in capitals is matched to the id the database returns (PostgreSQL writes a uuid in lower case)', async () => {
      const log: Log = []
      const consumer = new Consumer(logged(db, names, log), {consumer: 'c-case', tables: names})
      const id = uuidv7()
      const {items, calls} = batch([id.toUpperCase(), id, uuidv7()])
      const results = await consumer.handleBatch(items)
      // a uuid column holds one value for both spellings; a text column two
      const twice = target.dialect === 'postgres' ? 'duplicate' : 'applied'
      expect(results.map((r) => r.outcome)).toEqual(['applied', twice, 'applied'])
      expect(calls).toEqual([1, twice === 'applied' ? 1 : 0, 1])
      // told apart from the returned ids, not by running the batch again a savepoint each
      if (db.dialect.events.inboxReturnedId) expect(log).toEqual([['inbox-many', ...calls.filter((n) => n > 0).map(() => 'effect')]])
    })
  })
}
