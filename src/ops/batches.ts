// The batch loop replay and archive share: keyset pagination over (created_at, id), each
// batch its own short transaction, so no lock is held for longer than one batch and rows a
// batch skipped are never scanned again.
import {sql, type ExpressionBuilder, type Expression, type RawBuilder, type SelectExpression, type SqlBool} from 'kysely'
import type {Queryable} from '../db/index.js'
import {nextTurn} from '../event-loop.js'
import {sampleOf, type SampleEvent} from './events.js'
import type {Cursor, OpsContext} from './query.js'
import {run} from './query.js'

export interface Progress {
  /** rows examined so far */
  seen: number
  /** rows changed so far */
  changed: number
  batches: number
  /** the loop stopped early because `signal` was aborted (the batch in flight was committed first) */
  interrupted?: boolean
}

export interface BatchOptions {
  size: number
  onProgress?: (p: Progress) => void
  /** checked between batches: once aborted, no new batch starts (SIGTERM, --timeout) */
  signal?: AbortSignal
}

export type Where = (eb: ExpressionBuilder<any, any>) => Expression<SqlBool>[]

export interface BatchRow {
  id: string
  event_type: string
  cursor_at: string
  [column: string]: unknown
}

/** After the cursor, in (created_at, id) order; written so a created_at index serves it on every dialect. */
export function after(cursor: Cursor | undefined): Where {
  if (!cursor) return () => []
  return (eb) => [eb('created_at', '>=', cursor.at), eb.or([eb('created_at', '>', cursor.at), eb('id', '>', cursor.id)])]
}

/**
 * Runs `step` once per batch of at most `size` rows of `table` matching `where`, oldest first,
 * each call in its own transaction with the batch's rows locked (FOR UPDATE; SQLite: the
 * IMMEDIATE transaction is the lock). Stops when a batch comes back short.
 */
export async function forEachBatch(
  ctx: OpsContext,
  table: string,
  where: Where,
  options: BatchOptions & {columns?: SelectExpression<any, any>[]},
  step: (tx: Queryable, rows: BatchRow[]) => Promise<number>,
): Promise<Progress> {
  const {db, k} = ctx
  const progress: Progress = {seen: 0, changed: 0, batches: 0}
  const cursorAt = sql.raw<string>(db.dialect.exactTime('created_at'))
  let cursor: Cursor | undefined
  for (;;) {
    if (await stopRequested(options, progress)) break
    const position = after(cursor)
    let query = k
      .selectFrom(table)
      .select(['id', 'event_type', cursorAt.as('cursor_at'), ...(options.columns ?? [])])
      .where((eb) => eb.and([...where(eb), ...position(eb)]))
      .orderBy('created_at')
      .orderBy('id')
      .limit(options.size)
    if (db.dialect.name !== 'sqlite') query = query.forUpdate()
    const batch = await db.transaction(async (tx) => {
      const rows = (await run(tx, query)) as BatchRow[]
      const changed = rows.length > 0 ? await step(tx, rows) : 0
      return {rows, changed}
    })
    if (batch.rows.length === 0) break
    progress.seen += batch.rows.length
    progress.changed += batch.changed
    progress.batches++
    const last = batch.rows[batch.rows.length - 1]
    cursor = {at: String(last.cursor_at), id: String(last.id)}
    options.onProgress?.({...progress})
    if (batch.rows.length < options.size) break
  }
  return progress
}

async function stopRequested(options: BatchOptions, progress: Progress): Promise<boolean> {
  await nextTurn() // so a signal or --timeout is seen between SQLite batches too
  if (!options.signal?.aborted) return false
  progress.interrupted = true
  return true
}

/** CASE expression: 1 when a relay holds a live lease on the row (database clock). */
export function leasedNow(ctx: OpsContext): RawBuilder<number> {
  return sql<number>`CASE WHEN lease_owner IS NOT NULL AND lease_until > ${sql.raw(ctx.db.dialect.now)} THEN 1 ELSE 0 END`
}

export function countBy(map: Record<string, number>, key: string, n = 1): void {
  map[key] = (map[key] ?? 0) + n
}

/** Adds a batch's rows to a result's per-type counts and its sample (first `sampleSize` rows). */
export function tally(out: {byType: Record<string, number>; sample: SampleEvent[]}, ctx: OpsContext, rows: BatchRow[], sampleSize = 10): void {
  for (const row of rows) {
    countBy(out.byType, String(row.event_type))
    if (out.sample.length < sampleSize) out.sample.push(sampleOf(ctx.db.dialect, row))
  }
}

type Compilable = Parameters<typeof run>[1]

/**
 * The one-statement variant (PostgreSQL's data-modifying CTEs): `statement(position)` picks
 * the next batch after the cursor and changes it, returning the rows it saw (with cursor_at);
 * `afterRows` runs in the same transaction before the commit (the export file).
 */
export async function forEachStatementBatch(
  ctx: OpsContext,
  options: BatchOptions,
  statement: (position: Where) => Compilable,
  afterRows: (tx: Queryable, rows: BatchRow[]) => Promise<number>,
): Promise<Progress> {
  const progress: Progress = {seen: 0, changed: 0, batches: 0}
  let cursor: Cursor | undefined
  for (;;) {
    if (await stopRequested(options, progress)) break
    const query = statement(after(cursor))
    const batch = await ctx.db.transaction(async (tx) => {
      const rows = (await run(tx, query)) as BatchRow[]
      return {rows, changed: rows.length > 0 ? await afterRows(tx, rows) : 0}
    })
    if (batch.rows.length === 0) break
    progress.seen += batch.rows.length
    progress.changed += batch.changed
    progress.batches++
    // RETURNING order is not guaranteed: the cursor is the greatest (created_at, id) seen
    const last = batch.rows.reduce((a, b) => (keyOf(b) > keyOf(a) ? b : a))
    cursor = {at: String(last.cursor_at), id: String(last.id)}
    options.onProgress?.({...progress})
    if (batch.rows.length < options.size) break
  }
  return progress
}

// exactTime() text is fixed-width ISO on PostgreSQL, so it sorts like the timestamp
function keyOf(row: BatchRow): string {
  return `${row.cursor_at} ${row.id}`
}
