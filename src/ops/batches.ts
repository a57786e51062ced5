// The batch loop replay and archive share: keyset pagination over (created_at, id), each
// batch its own short transaction, so no lock is held for longer than one batch and rows a
// batch skipped are never scanned again.
import {sql, type ExpressionBuilder, type Expression, type RawBuilder, type SelectExpression, type SqlBool} from 'kysely'
import type {Db, Queryable} from '../db/index.js'
import {nextTurn} from '../core/event-loop.js'
import {sampleOf, type SampleEvent} from './events.js'
import type {Sql, SummaryWanted} from '../../dialects/index.js'
import type {Cursor, OpsContext} from './query.js'
import {bindSlots, compiled, num, REPEATED, run, slot, templateOf, type Compilable} from './query.js'

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

/** The (created_at, id) span from the batch's start position through its last row. */
function rangeOf(position: Where, last: Cursor, rowValues: boolean): Where {
  const through = atOrBefore(last, rowValues)
  return (eb) => [...position(eb), ...through(eb)]
}

/** A changing statement by range touched a different number of rows than the locked batch: roll the batch back. */
export function expectBatch(changed: number, expected: number): number {
  if (changed !== expected) throw new Error(`the batch changed ${changed} rows where it had locked ${expected} (rows entered its range meanwhile); it was rolled back, rerun`)
  return changed
}

/**
 * At or before a row in (created_at, id) order: the upper end of a batch's range (bound values,
 * or subqueries). `rowValues`: as Dialect.keysetRowValues says.
 */
function atOrBefore(last: {at: string | RawBuilder<unknown>; id: string | RawBuilder<unknown>}, rowValues: boolean): Where {
  if (rowValues) return (eb) => [eb('created_at', '<=', last.at), sql<SqlBool>`(created_at, id) <= (${last.at}, ${last.id})`]
  return (eb) => [eb('created_at', '<=', last.at), eb.or([eb('created_at', '<', last.at), eb('id', '<=', last.id)])]
}

/**
 * After the cursor, in (created_at, id) order; written so a created_at index serves it on every
 * dialect. `rowValues`: as Dialect.keysetRowValues says.
 */
function after(cursor: Cursor | undefined, rowValues: boolean): Where {
  if (!cursor) return () => []
  if (rowValues) return (eb) => [eb('created_at', '>=', cursor.at), sql<SqlBool>`(created_at, id) > (${cursor.at}, ${cursor.id})`]
  return (eb) => [eb('created_at', '>=', cursor.at), eb.or([eb('created_at', '>', cursor.at), eb('id', '>', cursor.id)])]
}

/**
 * Runs `step` once per batch of at most `size` rows of `table` matching `where`, oldest first,
 * each call in its own transaction with the batch's rows locked (FOR UPDATE; SQLite: the
 * IMMEDIATE transaction is the lock). Stops when a batch comes back short. `range` is the
 * batch's (created_at, id) span: with `where`, it picks the locked rows again in one index
 * range, which the server does far faster than an id list (MariaDB UPDATE of 1000 rows:
 * 7.6-9.8 ms against 19-31 ms, ANALYZE put ~15 ms of it in planning). A row outside the batch
 * could only enter that span by changing its created_at or by being inserted in the past, so
 * a step that changes by range must check it changed exactly the batch's rows.
 */
export async function forEachBatch(
  ctx: OpsContext,
  table: string,
  where: Where,
  options: BatchOptions & {columns?: SelectExpression<any, any>[]},
  step: (tx: Queryable, rows: BatchRow[], range: Where) => Promise<number>,
): Promise<Progress> {
  const {db, k} = ctx
  const cursorAt = sql.raw<string>(db.dialect.batches.exactTime('created_at'))
  return batchLoop(db, options, async ({position, rangeTo}) => {
    let query = k
      .selectFrom(table)
      .select(['id', 'event_type', cursorAt.as('cursor_at'), ...(options.columns ?? [])])
      .where((eb) => eb.and([...where(eb), ...position(eb)]))
      .orderBy('created_at')
      .orderBy('id')
      .limit(options.size)
    if (db.dialect.name !== 'sqlite') query = query.forUpdate()
    // not REPEATED: on MariaDB a kept prepared statement made this read slower (300k-row archive 10.9 s vs 10.2 s)
    return batchTransaction(db, async (tx) => {
      const rows = (await run(tx, query)) as BatchRow[]
      if (rows.length === 0) return {seen: 0, changed: 0}
      const lastRow = rows[rows.length - 1]
      const last = {at: String(lastRow.cursor_at), id: String(lastRow.id)}
      return {seen: rows.length, changed: await step(tx, rows, rangeTo(last)), cursor: last}
    })
  })
}

/** What one batch did: rows read, rows changed, and the cursor the next batch starts after. */
interface BatchDone {
  seen: number
  changed: number
  cursor?: Cursor
}

/** Where a batch starts, written the way the dialect's keyset bounds must be (Dialect.keysetRowValues). */
interface BatchStart {
  /** after the previous batch's last row (nothing before the first batch) */
  position: Where
  /** the same with the cursor as stand-ins, for a statement built once per shape (reuse) */
  slotted: Where
  /** rangeTo() from `slotted` through the stand-ins of the batch's last row (last_at, last_id) */
  slottedRange: Where
  /** the values of those stand-ins in this batch */
  values: Record<string, unknown>
  /** the first batch's statements have no position: another shape */
  first: boolean
  /** the span from the position through the batch's last row */
  rangeTo: (last: Cursor) => Where
}

const CURSOR_SLOTS = {at: slot('cursor_at'), id: slot('cursor_id')}
const LAST_SLOTS = {at: slot('last_at'), id: slot('last_id')}

/**
 * The loop the three batch shapes share, inside batchRun: before each batch it honours
 * `signal`; after each non-empty one it adds up and reports progress; it stops on an empty or
 * short batch, or one that gives no cursor to go on from.
 */
async function batchLoop(db: Db, options: BatchOptions, batch: (start: BatchStart) => Promise<BatchDone>): Promise<Progress> {
  return batchRun(db, async () => {
    const progress: Progress = {seen: 0, changed: 0, batches: 0}
    const rowValues = db.dialect.batches.keysetRowValues
    const slotted = after(CURSOR_SLOTS, rowValues)
    const slottedRange = {first: rangeOf(() => [], LAST_SLOTS, rowValues), next: rangeOf(slotted, LAST_SLOTS, rowValues)}
    let cursor: Cursor | undefined
    for (;;) {
      if (await stopRequested(options, progress)) break
      const position = after(cursor, rowValues)
      const done = await batch({
        position,
        slotted: cursor ? slotted : position,
        slottedRange: cursor ? slottedRange.next : slottedRange.first,
        values: {cursor_at: cursor?.at, cursor_id: cursor?.id},
        first: !cursor,
        rangeTo: (last) => rangeOf(position, last, rowValues),
      })
      if (done.seen === 0) break
      progress.seen += done.seen
      progress.changed += done.changed
      progress.batches++
      cursor = done.cursor
      options.onProgress?.({...progress})
      if (done.seen < options.size || !cursor) break
    }
    return progress
  })
}

/**
 * What a whole run of batches needs around its loop: the dialect's setting for back-to-back
 * batches (Dialect.batchRunSetting), put back to the value found whatever happens, and, after
 * a loop that ends normally (done or interrupted), flushBatches and the setting's `settle`.
 */
async function batchRun(db: Db, loop: () => Promise<Progress>): Promise<Progress> {
  const setting = db.dialect.batches.batchRunSetting
  const [row] = setting ? await db.query(setting.read) : []
  const before = Number(Object.values(row ?? {})[0])
  const restore = () => (setting && Number.isSafeInteger(before) ? db.execute(setting.set(before)) : Promise.resolve(0))
  if (setting) await db.execute(setting.set(setting.during))
  let progress: Progress
  try {
    progress = await loop()
    await flushBatches(db, progress)
  } catch (error) {
    await restore().catch(() => {}) // the loop's error is the one to report
    throw error
  }
  await restore()
  // like flushBatches: a run that committed no batch has nothing of its own to settle
  if (setting?.settle && progress.batches > 0) await db.query(setting.settle)
  return progress
}

/** One batch's transaction; where the dialect allows, it commits without waiting for the disk (see flushBatches). */
function batchTransaction<T>(db: Db, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const relaxed = db.dialect.batches.relaxedBatchCommit
  if (!relaxed) return db.transaction(fn)
  return db.transaction(fn, {first: relaxed.relax})
}

/** After the last batch (or an interruption): one commit that waits for the disk makes every batch before it durable. */
async function flushBatches(db: Db, progress: Progress): Promise<void> {
  const relaxed = db.dialect.batches.relaxedBatchCommit
  if (relaxed && progress.batches > 0) await db.query(relaxed.flush)
}

async function stopRequested(options: BatchOptions, progress: Progress): Promise<boolean> {
  await nextTurn() // so a signal or --timeout is seen between SQLite batches too
  if (!options.signal?.aborted) return false
  progress.interrupted = true
  return true
}

/**
 * CASE expression: 1 when a relay holds a live lease on the row (database clock), now or at
 * `at`: the stand-in (slot) of an instant read from the database, bound as Dialect.render.timeParam
 * gives it, so that two statements decide alike.
 */
export function leasedNow(ctx: OpsContext, at?: string): RawBuilder<number> {
  const now = at ? sql`${at}` : sql.raw(ctx.db.dialect.render.now)
  return sql<number>`CASE WHEN lease_owner IS NOT NULL AND lease_until > ${now} THEN 1 ELSE 0 END`
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
  return batchLoop(ctx.db, options, ({position}) => {
    const query = statement(position)
    return batchTransaction(ctx.db, async (tx) => {
      const rows = (await run(tx, query, REPEATED)) as BatchRow[]
      if (rows.length === 0) return {seen: 0, changed: 0}
      const changed = await afterRows(tx, rows)
      // RETURNING order is not guaranteed: the cursor is the greatest (created_at, id) seen
      const last = rows.reduce((a, b) => (keyOf(b) > keyOf(a) ? b : a))
      return {seen: rows.length, changed, cursor: {at: String(last.cursor_at), id: String(last.id)}}
    })
  })
}

/** CTE `batch` of a one-statement batch: the next `size` rows of the selection after the cursor. */
export function batchRead(ctx: OpsContext, where: Where, position: Where, size: number, skip?: RawBuilder<number>) {
  return ctx.k
    .selectFrom(ctx.names.outbox)
    .select(['id', 'event_type', 'created_at', ...(skip ? [skip.as('skip')] : [])])
    .where((eb) => eb.and([...where(eb), ...position(eb)]))
    .orderBy('created_at')
    .orderBy('id')
    .limit(size)
}

/**
 * Without writable CTEs: the summary of the next batch, read before the batch is changed
 * (forEachSummarisedBatch's `change`); `skip` is 1 for the rows the change will leave alone,
 * `unchanged` 1 for those it will find as they should be (Dialect.updateCountsChangedRows).
 */
export function summaryRead(ctx: OpsContext, where: Where, position: Where, size: number, wanted: SummaryWanted, skip?: RawBuilder<number>, unchanged?: RawBuilder<number>) {
  const {rowLocator: locator, updateCountsChangedRows, batchReadLocks} = ctx.db.dialect.batches
  const batch = batchRead(ctx, where, position, size, skip ?? sql<number>`0`)
    .$if(Boolean(locator) && wanted.span !== false, (qb) => qb.select(sql.raw(locator!.column).as('locator')))
    .$if(Boolean(updateCountsChangedRows), (qb) => qb.select((unchanged ?? sql<number>`0`).as('unchanged')))
  const summary = sql.raw(ctx.db.dialect.batches.batchSummary(wanted))
  // An embedded query compiles in parentheses already; SQLite refuses a second pair.
  // Locking: the rows stay as summed up until the change (MariaDB has no NOT MATERIALIZED).
  if (batchReadLocks) return compiled(ctx.k, sql`WITH batch AS ${batch.forUpdate()} ${summary}`)
  // NOT MATERIALIZED: the summary's one pass reads it as it is produced; the rare second
  // reader (sample, skipped ids) reads it again rather than every batch storing it.
  return compiled(ctx.k, sql`WITH batch AS NOT MATERIALIZED ${batch} ${summary}`)
}

/**
 * For one-statement batches: CTE `batch_last` (the last row of CTE `batch`) and the predicate
 * "at or before it". A statement that changes `position AND selection AND inBatch()` touches the
 * batch's rows through a created_at index range, where `id = ANY(ids)` paid one primary-key
 * descent per row; within one statement both see the same snapshot, so they are the same rows.
 */
const BATCH_LAST = sql`batch_last AS (SELECT created_at, id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1)`
// one-statement batches run on PostgreSQL only, whose keyset bounds are never row values
export const inBatch: Where = atOrBefore({at: sql`(SELECT created_at FROM batch_last)`, id: sql`(SELECT id FROM batch_last)`}, false)

export interface BatchSummary {
  /** rows the batch read */
  seen: number
  /** rows it changed */
  changed: number
  byType: Record<string, number>
  /** the first changed rows (at most the sample size asked for) */
  sample: SampleEvent[]
  /** rows read but not changed (leased, or changed meanwhile), at most the number asked for */
  skippedIds: string[]
  /** of the changed rows, those the change finds as they should be already (Dialect.updateCountsChangedRows) */
  unchanged: number
  /** the batch's last (created_at, id) */
  cursor?: Cursor
  /** without writable CTEs, where the dialect has a rowLocator: the smallest and largest locator of the rows to change */
  span?: LocatorSpan
  /** without writable CTEs: the database clock the summary judged leases at (Dialect.batchSummary's read_at) */
  readAt?: string
}

/** Numbers (SQLite's rowid) or ids (InnoDB's clustered key). */
export interface LocatorSpan {
  lo: number | string
  hi: number | string
}

/**
 * A span this much longer than the batch goes through the indexes instead: the locator read
 * costs one row per locator in the span (rows inserted out of created_at order, or a
 * selective --type, spread a batch thinly).
 */
const SPAN_SLACK = 2

/** A numeric span is judged here; an id span only comes back where the dialect's summary found it tight. */
function tightSpan(span: LocatorSpan | undefined, rows: number): LocatorSpan | undefined {
  if (!span || typeof span.lo !== 'number' || typeof span.hi !== 'number') return span
  return span.hi - span.lo < SPAN_SLACK * rows ? span : undefined
}

/**
 * The table a summarised batch's change names, and the predicate that keeps it to the
 * batch's locator span (Dialect.rowLocator): by span, the change reads the table by locator
 * alone, between the stand-ins span_lo and span_hi (forEachSummarisedBatch binds them);
 * otherwise through the indexes as before.
 */
export function changeTarget(ctx: OpsContext, table: string, bySpan: boolean): {table: any; within: Where} {
  const locator = ctx.db.dialect.batches.rowLocator
  if (!bySpan || !locator) return {table, within: () => []}
  const name = sql.table(ctx.names.schema ? `${ctx.names.schema}.${table}` : table)
  return {
    table: sql`${name}${sql.raw(locator.onlyByLocator)}`,
    within: () => [sql<SqlBool>`${sql.raw(locator.column)} BETWEEN ${slot('span_lo')} AND ${slot('span_hi')}`],
  }
}

/**
 * How a summarised batch's change (SQLite, MySQL) changes the summed-up rows: `range` (the
 * batch's (created_at, id) span, as stand-ins), `rows` (how many the summary says it changes),
 * `bySpan` (whether changeTarget may read by locator span), and `reuse`, through which every
 * statement of the change is built: it binds the range's and the span's values, the last
 * row's id (last_id), `rows` (batch_rows), the instant the summary judged leases at
 * (read_at), and any `slots` of the change's own.
 */
export type SummarisedChange = (tx: Queryable, batch: {range: Where; rows: number; bySpan: boolean}, reuse: Reuse) => Promise<number>

/**
 * A statement built once per `shape` (the text: what it selects, how big its sample is) from
 * `build`, which takes the cursor from the position it was given and every other value that
 * changes from batch to batch from `slots` through stand-ins (slot(name)); each batch binds
 * its own values. A value captured any other way would be the first batch's for good.
 */
export type Reuse = (shape: string, slots: Record<string, unknown>, build: () => Compilable) => Sql

/**
 * A batch summed up by the database (Dialect.batchSummary), so a batch of thousands of events
 * costs one small row on the wire instead of one row per event. `statement` builds its query
 * through `reuse` (a template, bound per batch). With writable CTEs
 * (PostgreSQL) `statement` (built by summarisedStatement) reads the next batch after the
 * cursor, changes it and returns the summary. Without (SQLite), `statement` only reads the
 * summary and `change` then changes the same rows through the batch's (created_at, id) range,
 * in the same transaction: exact only where that transaction excludes every other writer, so
 * the change must report as many rows as the summary said. The change also reads the rows by
 * their locator span when it is tight enough (changeTarget). `beforeCommit`
 * runs inside the batch's transaction after the change (a failpoint).
 *
 * Each batch stays an explicit transaction even where it is one statement: a process that
 * stops (second SIGTERM, --timeout, crash) while its batch waits on a lock leaves a
 * transaction that can never commit. An autocommitted statement would go on waiting on the
 * server and commit the batch after the process had reported it rolled back (tried: saved
 * two of four round trips per batch, and broke exactly that in test/ops-interrupt.test.ts).
 */
export async function forEachSummarisedBatch(
  ctx: OpsContext,
  options: BatchOptions & {beforeCommit?: () => void; change?: SummarisedChange},
  statement: (position: Where, reuse: Reuse) => Sql | Promise<Sql>,
  onBatch: (summary: BatchSummary) => void,
): Promise<Progress> {
  const templates = new Map<string, Sql>()
  return batchLoop(ctx.db, options, async ({slotted, slottedRange, values, first}) => {
    // every batch's statement is the same but for its values: built once per shape
    const reuse: Reuse = (shape, slots, build) => {
      const key = `${first ? 'first' : 'next'} ${shape}`
      let template = templates.get(key)
      if (!template) templates.set(key, (template = templateOf(build())))
      return bindSlots(template, {...values, ...slots})
    }
    const query = await statement(slotted, reuse)
    const summary = await batchTransaction(ctx.db, async (tx) => {
      const [row] = await run(tx, query, REPEATED)
      const read = readSummary(row ?? {})
      const span = tightSpan(read.span, read.seen)
      if (options.change && read.cursor && read.changed > 0) {
        const bound = {last_at: read.cursor.at, last_id: read.cursor.id, batch_rows: read.changed, read_at: read.readAt, ...(span && {span_lo: span.lo, span_hi: span.hi})}
        const reuseInChange: Reuse = (shape, slots, build) => reuse(`change ${span ? 'by span' : 'by index'} ${shape}`, {...bound, ...slots}, build)
        const changed = await options.change(tx, {range: slottedRange, rows: read.changed, bySpan: Boolean(span)}, reuseInChange)
        expectBatch(changed, read.changed - read.unchanged)
      }
      options.beforeCommit?.()
      return read
    })
    if (summary.seen > 0) onBatch(summary)
    return summary
  })
}

/**
 * A one-statement batch (writable CTEs): CTE `batch` (batchRead, MATERIALIZED: computed once,
 * so its LIMIT bounds the rows, cf. BUG #15715) and `batch_last` (what inBatch and the
 * dialect's summary read), then `ctes` (which must define `changed`), then the summary.
 */
export function summarisedStatement(ctx: OpsContext, batch: ReturnType<typeof batchRead>, ctes: RawBuilder<unknown>, wanted: {sample: number; listed: number}): Compilable {
  return compiled(ctx.k, sql`WITH batch AS MATERIALIZED (${batch}), ${BATCH_LAST}, ${ctes} ${sql.raw(ctx.db.dialect.batches.batchSummary(wanted))}`)
}

function readSummary(row: Record<string, unknown>): BatchSummary {
  const json = <T>(value: unknown, empty: T): T => (value == null ? empty : typeof value === 'string' ? JSON.parse(value) : (value as T))
  const sample = json<{id: string; event_type: string; created_at: string}[]>(row.sample, [])
  const byType = json<Record<string, number>>(row.by_type, {})
  return {
    seen: num(row.seen),
    changed: num(row.changed),
    // MySQL's summary also names the types whose rows were all skipped
    byType: Object.fromEntries(Object.entries(byType).filter(([, n]) => Number(n) > 0)),
    // in (created_at, id) order: MySQL cannot order inside JSON_ARRAYAGG
    sample: sample
      .map((r) => ({id: String(r.id), eventType: String(r.event_type), createdAt: new Date(r.created_at).toISOString(), key: `${r.created_at} ${r.id}`}))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map(({key: _key, ...event}) => event),
    skippedIds: json<string[]>(row.skipped_ids, []).map(String),
    unchanged: num(row.unchanged),
    cursor: row.cursor_id == null ? undefined : {at: String(row.cursor_at), id: String(row.cursor_id)},
    span: spanOf(row.span_lo, row.span_hi),
    readAt: row.read_at == null ? undefined : String(row.read_at),
  }
}

function spanOf(lo: unknown, hi: unknown): LocatorSpan | undefined {
  if (Number.isSafeInteger(lo) && Number.isSafeInteger(hi)) return {lo: Number(lo), hi: Number(hi)}
  if (typeof lo === 'string' && typeof hi === 'string') return {lo, hi}
  return undefined
}

/** Adds a batch summary to a result's per-type counts and its sample. */
export function tallySummary(out: {byType: Record<string, number>; sample: SampleEvent[]}, summary: BatchSummary, sampleSize = 10): void {
  for (const [type, n] of Object.entries(summary.byType)) countBy(out.byType, type, n)
  for (const row of summary.sample) if (out.sample.length < sampleSize) out.sample.push(row)
}

// exactTime() text is fixed-width ISO on PostgreSQL, so it sorts like the timestamp
function keyOf(row: BatchRow): string {
  return `${row.cursor_at} ${row.id}`
}
