// Batches read row by row, for work that needs every row in JavaScript: archive's export file
// where the plan has no one-statement batches, and replay from the archive.
import {sql, type SelectExpression} from 'kysely'
import type {Queryable} from '../db/index.js'
import {after, rangeOf, type Where} from './batch-keyset.js'
import {batchLoop, batchTransaction, type BatchOptions, type Progress} from './batches.js'
import type {OpsContext} from './query.js'
import {run} from './statements.js'

export interface BatchRow {
  id: string
  event_type: string
  /** created_at as the dialect's exactTime writes it: the cursor */
  cursor_at: string
  [column: string]: unknown
}

/**
 * Runs `step` once per batch of at most `size` rows of `table` matching `where`, oldest first,
 * each call in its own transaction with the batch's rows held as the plan's `exclusion` says
 * (FOR UPDATE; or the single writer's transaction). Stops when a batch comes back short.
 * `range` is the batch's (created_at, id) span: with `where`, it picks the held rows again in
 * one index range, which the server does far faster than an id list (BENCHMARKS.md, figures behind the code's choices).
 * A row outside the batch could only enter that span by changing its created_at or by being
 * inserted in the past, so a step that changes by range must check it changed exactly the
 * batch's rows (expectBatch).
 */
export async function forEachBatch(
  ctx: OpsContext,
  table: string,
  where: Where,
  options: BatchOptions & {columns?: SelectExpression<any, any>[]},
  step: (tx: Queryable, rows: BatchRow[], range: Where) => Promise<number>,
): Promise<Progress> {
  const {db, k} = ctx
  const plan = db.dialect.batches.plan
  const cursorAt = sql.raw<string>(db.dialect.batches.exactTime('created_at'))
  return batchLoop(db, options, async (cursor) => {
    const position = after(cursor, plan.keysetBounds)
    let query = k
      .selectFrom(table)
      .select(['id', 'event_type', cursorAt.as('cursor_at'), ...(options.columns ?? [])])
      .where((eb) => eb.and([...where(eb), ...position(eb)]))
      .orderBy('created_at')
      .orderBy('id')
      .limit(options.size)
    if (plan.exclusion === 'row-locks') query = query.forUpdate()
    // not REPEATED: a kept prepared statement made this read slower on MariaDB (BENCHMARKS.md, figures behind the code's choices)
    return batchTransaction(db, async (tx) => {
      const rows = await run<BatchRow>(tx, query)
      if (rows.length === 0) return {seen: 0, changed: 0}
      const lastRow = rows[rows.length - 1]
      const last = {at: String(lastRow.cursor_at), id: String(lastRow.id)}
      return {seen: rows.length, changed: await step(tx, rows, rangeOf(position, last, plan.keysetBounds)), cursor: last}
    })
  })
}
