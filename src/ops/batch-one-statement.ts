// One-statement batches (OneStatementPlan: data-modifying CTEs): one statement picks the next
// batch after the cursor, changes it and returns either its rows or its summary.
import {sql, type RawBuilder} from 'kysely'
import {SUMMARY_INPUT, type OneStatementPlan} from '../../dialects/batches.js'
import type {Queryable} from '../db/index.js'
import {after, atOrBefore, type Where} from './batch-keyset.js'
import type {BatchRow} from './batch-rows.js'
import {summarySelect} from './batch-summary.js'
import {batchLoop, batchTransaction, type BatchOptions, type Progress} from './batches.js'
import type {OpsContext} from './query.js'
import {compiled, REPEATED, run, type Compilable} from './statements.js'

/**
 * `statement(position)` picks the next batch after the cursor and changes it, returning the
 * rows it saw (with cursor_at); `afterRows` runs in the same transaction before the commit
 * (the export file) and says how many rows the batch changed.
 */
export async function forEachStatementBatch(
  ctx: OpsContext,
  plan: OneStatementPlan,
  options: BatchOptions,
  statement: (position: Where) => Compilable,
  afterRows: (tx: Queryable, rows: BatchRow[]) => Promise<number>,
): Promise<Progress> {
  return batchLoop(ctx.db, options, (cursor) => {
    const query = statement(after(cursor, plan.keysetBounds))
    return batchTransaction(ctx.db, async (tx) => {
      const rows = await run<BatchRow>(tx, query, REPEATED)
      if (rows.length === 0) return {seen: 0, changed: 0}
      const changed = await afterRows(tx, rows)
      // RETURNING order is not guaranteed: the cursor is the greatest (created_at, id) seen
      const last = rows.reduce((a, b) => (keyOf(b) > keyOf(a) ? b : a))
      return {seen: rows.length, changed, cursor: {at: String(last.cursor_at), id: String(last.id)}}
    })
  })
}

/** CTE `batch`: the next `size` rows of the selection after the cursor (`skip`: SUMMARY_INPUT's, for a summary-then-change summary). */
export function batchRead(ctx: OpsContext, where: Where, position: Where, size: number, skip?: RawBuilder<number>) {
  return ctx.k
    .selectFrom(ctx.names.outbox)
    .select(['id', 'event_type', 'created_at', ...(skip ? [skip.as(SUMMARY_INPUT.skip)] : [])])
    .where((eb) => eb.and([...where(eb), ...position(eb)]))
    .orderBy('created_at')
    .orderBy('id')
    .limit(size)
}

/**
 * "At or before CTE `batch_last`" (the last row of CTE `batch`). A statement that changes
 * `position AND selection AND inBatch` touches the batch's rows through a created_at index
 * range, where `id = ANY(ids)` paid one primary-key descent per row; within one statement
 * both see the same snapshot, so they are the same rows.
 */
export function inBatch(plan: OneStatementPlan): Where {
  return atOrBefore({at: sql`(SELECT created_at FROM batch_last)`, id: sql`(SELECT id FROM batch_last)`}, plan.keysetBounds)
}

const BATCH_LAST = sql`batch_last AS (SELECT created_at, id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1)`

/**
 * A summed-up one-statement batch: CTE `batch` (batchRead, MATERIALIZED: computed once, so
 * its LIMIT bounds the rows, cf. PostgreSQL BUG #15715) and `batch_last` (what inBatch and the
 * plan's summary read), then `ctes` (which must define `changed`), then the summary.
 */
export function summarisedStatement(ctx: OpsContext, plan: OneStatementPlan, batch: ReturnType<typeof batchRead>, ctes: RawBuilder<unknown>, wanted: {sample: number; listed: number}): Compilable {
  return compiled(ctx.k, sql`WITH batch AS MATERIALIZED (${batch}), ${BATCH_LAST}, ${ctes} ${sql.raw(summarySelect(plan.summary(wanted)))}`)
}

// a one-statement plan's exactTime text sorts like the timestamp (OneStatementPlan)
function keyOf(row: BatchRow): string {
  return `${row.cursor_at} ${row.id}`
}
