// Summarised batches: each batch summed up by the database into one row (BatchSummaryRow), so
// a batch of thousands of events costs one small row on the wire instead of one per event.
// One-statement plans read, change and sum up in the batch's one statement; summary-then-
// change plans read the summary, then change the same rows in the same transaction.
import {sql, type RawBuilder, type SqlBool} from 'kysely'
import {SUMMARY_INPUT, type BatchSummaryRow, type RowLocator, type SummaryThenChangePlan, type SummaryWanted} from '../../dialects/batches.js'
import type {Sql} from '../../dialects/sql.js'
import type {Queryable} from '../db/index.js'
import {after, rangeOf, type Where} from './batch-keyset.js'
import {batchRead} from './batch-one-statement.js'
import {readSummary, summarySelect, type BatchSummary, type LocatorSpan} from './batch-summary.js'
import {batchLoop, batchTransaction, expectBatch, type BatchOptions, type Progress} from './batches.js'
import type {OpsContext} from './query.js'
import {compiled, REPEATED, run, type Compilable} from './statements.js'
import {slot, Template, type BatchValues} from './templates.js'

/**
 * Builds a statement through a Template kept per `shape` (the text: what it selects, how big
 * its sample is) and binds this batch's values into it. `build` takes the cursor from the
 * position it was given and every other per-batch value as a marker (templates.ts `slot`); a
 * value captured any other way would be the first batch's for good.
 */
export type Reuse = (shape: string, build: () => Compilable) => Sql

/**
 * How a summary-then-change batch changes the summed-up rows: `range` (the batch's
 * (created_at, id) span, as markers), `rows` (how many the summary says it changes), `bySpan`
 * (whether changeTarget may read by locator span), and `reuse`, through which every statement
 * of the change is built: it binds the range's and the span's values, the last row's id
 * (slot.last_id), `rows` (slot.batch_rows) and the instant the summary judged leases at
 * (slot.read_at). It returns the rows it changed.
 */
export type SummarisedChange = (tx: Queryable, batch: {range: Where; rows: number; bySpan: boolean}, reuse: Reuse) => Promise<number>

/**
 * What each batch runs, as the plan's kind says. `statement` builds the batch's summarised
 * statement through `reuse`: one-statement, summarisedStatement, which changes the rows too;
 * summary-then-change, summaryRead, and `change` then changes the rows the summary covered.
 * `beforeCommit` runs inside each batch's transaction last (a failpoint).
 */
export type SummarisedWork = {statement: (position: Where, reuse: Reuse) => Sql; beforeCommit?: () => void} & (
  | {kind: 'one-statement'}
  | {kind: 'summary-then-change'; plan: SummaryThenChangePlan; change: SummarisedChange}
)

const EMPTY: BatchSummaryRow = {seen: 0, changed: 0, by_type: null, sample: null, skipped_ids: null, cursor_at: null, cursor_id: null}

/**
 * Runs the batches of `work`. A summary-then-change batch's change runs in the summary's
 * transaction: exact only because that transaction keeps other writers off the rows (the
 * plan's `exclusion`), so it must report as many rows as the summary said (expectBatch).
 *
 * Each batch stays an explicit transaction even where it is one statement: a process that
 * stops (second SIGTERM, --timeout, crash) while its batch waits on a lock leaves a
 * transaction that can never commit. An autocommitted statement would go on waiting on the
 * server and commit the batch after the process had reported it rolled back (tried: it broke
 * exactly that in test/ops/interrupt.test.ts).
 */
export async function forEachSummarisedBatch(ctx: OpsContext, work: SummarisedWork, options: BatchOptions, onBatch: (summary: BatchSummary) => void): Promise<Progress> {
  const bounds = ctx.db.dialect.batches.plan.keysetBounds
  const templates = new Map<string, Template>()
  const afterCursor = after({at: slot.cursor_at, id: slot.cursor_id}, bounds)
  const through = {at: slot.last_at, id: slot.last_id}
  const ranges = {first: rangeOf(() => [], through, bounds), next: rangeOf(afterCursor, through, bounds)}
  return batchLoop(ctx.db, options, async (cursor) => {
    // the first batch has no position: statements of another shape
    const bind = (shape: string, build: () => Compilable, values: Partial<BatchValues>) => {
      const key = `${cursor ? 'next' : 'first'} ${shape}`
      let template = templates.get(key)
      if (!template) templates.set(key, (template = Template.of(build())))
      return template.bind(values)
    }
    const values: Partial<BatchValues> = {cursor_at: cursor?.at, cursor_id: cursor?.id}
    const query = work.statement(cursor ? afterCursor : () => [], (shape, build) => bind(shape, build, values))
    const summary = await batchTransaction(ctx.db, async (tx) => {
      const [row] = await run<BatchSummaryRow>(tx, query, REPEATED)
      const read = readSummary(row ?? EMPTY)
      if (work.kind === 'summary-then-change' && read.cursor && read.changed > 0) {
        const span = tightSpan(work.plan.locator, read.span, read.seen)
        const bound: Partial<BatchValues> = {...values, last_at: read.cursor.at, last_id: read.cursor.id, batch_rows: read.changed, read_at: read.readAt, ...(span && {span_lo: span.lo, span_hi: span.hi})}
        const reuse: Reuse = (shape, build) => bind(`change ${span ? 'by span' : 'by index'} ${shape}`, build, bound)
        const changed = await work.change(tx, {range: cursor ? ranges.next : ranges.first, rows: read.changed, bySpan: Boolean(span)}, reuse)
        expectBatch(changed, read.changed - read.unchanged)
      }
      work.beforeCommit?.()
      return read
    })
    if (summary.seen > 0) onBatch(summary)
    return summary
  })
}

/**
 * A summary-then-change batch's summary, read before the batch is changed: `skip` is 1 for the
 * rows the change will leave alone, `unchanged` 1 for those it will find as it leaves them
 * (where the plan's updateCounts is 'changed'); `wanted.span` false: the change will not read
 * by span, so the summary need not find it. Under `row-locks` exclusion the batch is read FOR
 * UPDATE, so its rows stay as summed up until the change.
 */
export function summaryRead(
  ctx: OpsContext,
  plan: SummaryThenChangePlan,
  where: Where,
  position: Where,
  size: number,
  wanted: SummaryWanted & {span?: boolean},
  skip?: RawBuilder<number>,
  unchanged?: RawBuilder<number>,
): Compilable {
  const span = Boolean(plan.locator) && wanted.span !== false
  const batch = batchRead(ctx, where, position, size, skip ?? sql<number>`0`)
    .$if(span, (qb) => qb.select(sql.raw(locatorColumn(plan.locator)).as(SUMMARY_INPUT.locator)))
    .$if(plan.updateCounts === 'changed', (qb) => qb.select((unchanged ?? sql<number>`0`).as(SUMMARY_INPUT.unchanged)))
  const summary = sql.raw(summarySelect(plan.summary({sample: wanted.sample, listed: wanted.listed, span})))
  // An embedded query compiles in parentheses already; SQLite refuses a second pair.
  // Locked, the rows stay as summed up until the change (MariaDB has no NOT MATERIALIZED).
  if (plan.exclusion === 'row-locks') return compiled(ctx.k, sql`WITH batch AS ${batch.forUpdate()} ${summary}`)
  // NOT MATERIALIZED: the summary's one pass reads it as it is produced; the rare second
  // reader (sample, skipped ids) reads it again rather than every batch storing it.
  return compiled(ctx.k, sql`WITH batch AS NOT MATERIALIZED ${batch} ${summary}`)
}

/**
 * A span this much longer than the batch goes through the indexes instead: the locator read
 * costs one row per locator in the span (rows inserted out of created_at order, or a
 * selective --type, spread a batch thinly).
 */
const SPAN_SLACK = 2

/** The span the change may read by: a row number span judged here; a primary-key span comes back only where the summary found it tight. */
function tightSpan(locator: RowLocator | undefined, span: LocatorSpan | undefined, rows: number): LocatorSpan | undefined {
  if (!locator || !span) return undefined
  if (locator.kind === 'primary-key') return span
  return typeof span.lo === 'number' && typeof span.hi === 'number' && span.hi - span.lo < SPAN_SLACK * rows ? span : undefined
}

function locatorColumn(locator: RowLocator | undefined): string {
  return locator?.kind === 'row-number' ? locator.column : 'id'
}

/** The table a change names, and the predicate that keeps it to the batch's locator span. */
export interface ChangeTarget {
  table: any
  within: Where
}

/**
 * The table a summary-then-change batch's change names, and the predicate that keeps it to
 * the batch's locator span: by span, the change reads the table by locator alone, between
 * slot.span_lo and slot.span_hi; otherwise through the indexes.
 */
export function changeTarget(ctx: OpsContext, locator: RowLocator | undefined, table: string, bySpan: boolean): ChangeTarget {
  if (!bySpan || !locator) return {table, within: () => []}
  const name = sql.table(ctx.names.schema ? `${ctx.names.schema}.${table}` : table)
  const onlyByLocator = locator.kind === 'row-number' ? locator.onlyByLocator : ''
  return {
    table: sql`${name}${sql.raw(onlyByLocator)}`,
    within: () => [sql<SqlBool>`${sql.raw(locatorColumn(locator))} BETWEEN ${slot.span_lo} AND ${slot.span_hi}`],
  }
}
