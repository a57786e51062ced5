// What `outbox status` costs: each of its statements reads the backlog, the failed rows or the
// window through an index, never the history. Counted by the database itself (PostgreSQL
// EXPLAIN ANALYZE, MariaDB ANALYZE: rows each table access read); SQLite counts none, so there
// its plan must go through the partial indexes, which hold no history.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import {indexNames} from '../../dialects/shared.js'
import type {Db} from '../../src/db/index.js'
import {databaseNow} from '../../src/ops/query.js'
import {statusRowsRead, statusStatements} from '../../src/ops/status.js'
import {insertHistory, insertRows, type RowSpec} from '../helpers/rows.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const HISTORY = 20_000

/** 5 pending (one in flight, one lease lapsed, one retrying), 1 failed, 30 published in the last hour, 1 two hours ago. */
function backlog(): RowSpec[] {
  const rows: RowSpec[] = [
    {type: 'a', created: -600},
    {type: 'a', created: -500, leaseOwner: 'relay-1', leaseUntil: 300, attempts: 1},
    {type: 'a', created: -400, leaseOwner: 'relay-2', leaseUntil: -60, attempts: 1},
    {type: 'a', created: -300, leaseUntil: 30, attempts: 2, lastError: 'broker down'},
    {type: 'b', created: -200},
    {type: 'a', created: -1000, failed: -100, attempts: 5, lastError: 'poison'},
    {type: 'a', created: -10_000, published: -7200},
  ]
  for (let i = 1; i <= 30; i++) rows.push({type: i % 2 ? 'a' : 'b', created: -1800 - i, published: -1800})
  return rows
}

// rows each statement may read: the backlog's own figures, whatever the history
const EXPECTED_ROWS = {pending: 5, failed: 1, oldest: 1, window: 30}
const EXPECTED_ROWS_BY_TYPE = {...EXPECTED_ROWS, oldest: 5, windowByType: 30}

for (const target of matrix) {
  describe.skipIf(!target.available)(`status reads on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let now: Date

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `sr${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
      now = await databaseNow(db)
      await insertRows(db, names, now, backlog())
      await insertHistory(db, names, now, HISTORY)
      await db.execute(db.dialect.verify.analyze(names))
    })
    afterAll(() => closeTables(db, names))

    it(`each statement reads only its part of the table, not the ${HISTORY} rows of history`, async () => {
      if (!db.dialect.verify.analyzeRows) return expectPartialIndexes()
      expect(await statusRowsRead(db, names, {windowMs: 3_600_000}, now)).toEqual(EXPECTED_ROWS)
      expect(await statusRowsRead(db, names, {windowMs: 3_600_000, byType: true}, now)).toEqual(EXPECTED_ROWS_BY_TYPE)
    })

    // SQLite: every access to the outbox names a partial index in the plan
    const expectPartialIndexes = async () => {
      const ix = indexNames(names)
      const partial = [ix.pending, ix.failed, ix.published]
      const statements = await statusStatements(db, names, {windowMs: 3_600_000, byType: true}, now)
      for (const [part, statement] of Object.entries(statements)) {
        const plan = await db.query<{detail: string}>(db.dialect.verify.explain(statement))
        const accesses = plan.map((row) => row.detail).filter((detail) => new RegExp(`^(SCAN|SEARCH) ${names.outbox}\\b`).test(detail))
        expect(accesses.length, part).toBeGreaterThan(0)
        for (const detail of accesses) expect(partial.some((name) => new RegExp(`INDEX ${name}\\b`).test(detail)), `${part}: ${detail}`).toBe(true)
      }
    }
  })
}
