// BatchesPart: what the operations commands (status, failed, replay, archive) need of a
// database beyond portable SQL. Each member is a contract: its meaning, and what the code in
// src/ops does with it. How archive and replay batches run on a database is one value, its
// BatchPlan; src/ops switches on plan.kind and reads the variant's members, never a dialect name.
import type {Sql} from './sql.js'

export interface BatchesPart {
  /** SQL expression: seconds (fractional) from one timestamp expression to another */
  secondsBetween(from: string, to: string): string
  /**
   * SQL expression: a timestamp column as text that, bound back as a parameter, compares
   * equal to the stored value (full precision), for keyset cursors over (created_at, id).
   */
  exactTime(column: string): string
  /** how archive and replay batches run on this database */
  readonly plan: BatchPlan
  /**
   * The statements, run in order on one connection, that open a read-only transaction whose
   * reads all see one snapshot (Db.transaction's `snapshot` option): status's statements
   * read in it, so an event moving between them is counted once. A REPEATABLE READ
   * transaction where the database has one; SQLite: a deferred read transaction.
   */
  readonly snapshotBegin: readonly string[]
  /**
   * Whether status's reads run as server-side prepared statements: PostgreSQL then plans them
   * once per connection (a partitioned outbox's plan covers every partition, and planning it
   * took longer than running it), which the relay's /metrics and status --watch read again
   * and again. Not on MySQL: a prepared statement binds LIMIT as a double, which it refuses.
   */
  readonly prepareReads: boolean
  /**
   * SQL expression without parameters: `ms` milliseconds before the instant a snapshot
   * transaction (snapshotBegin) reads as `render.now`, the same instant in each of its
   * statements. Status's window then takes no parameter, and PostgreSQL plans it once per
   * connection (a generic plan) instead of on every read (a custom plan, given the bound: every
   * partition of a partitioned outbox planned again). Undefined where each statement has a
   * clock of its own (MySQL's NOW() is the statement's start): the instant is bound instead.
   */
  snapshotAgo?(ms: number): string
  /**
   * A statement without parameters status runs first in its snapshot (Db.transaction's `first`,
   * sent with the BEGIN: no round trip of its own). PostgreSQL: generic plans for every read, so
   * the pending count too is planned once per connection; bound by the oldest pending event, its
   * ranges before it are pruned at executor start-up (a custom plan planned the ranges from it on,
   * on every read).
   */
  readonly snapshotFirst?: Sql
}

/**
 * How archive and replay go through a selection in batches: keyset pagination over
 * (created_at, id), each batch its own short transaction, each summed up by the database into
 * one row (BatchSummaryRow) instead of one row per event. The kinds differ in how a batch's
 * rows are changed:
 *
 * - `one-statement`: data-modifying CTEs (WITH moved AS (DELETE ... RETURNING) INSERT ...):
 *   one statement reads the batch, changes it and sums it up, with no separate locking read
 *   (PostgreSQL).
 * - `summary-then-change`: the summary is read first; the change follows over the batch's
 *   (created_at, id) range in the same transaction, which stays exact because the rows summed
 *   up cannot change in between (`exclusion`), and must change as many rows as the summary
 *   said (MySQL/MariaDB: a locking read; SQLite: one writer).
 *
 * Batches that need every row in JavaScript (an export file without one-statement batches,
 * replay from the archive) are read row by row on every kind, under `exclusion`.
 */
export type BatchPlan = OneStatementPlan | SummaryThenChangePlan

/** What every kind of batch plan says. */
interface PlanBase {
  /**
   * How a batch keeps the rows it read from other writers until it commits. `row-locks`: the
   * read locks them (SELECT ... FOR UPDATE), for servers with concurrent writers;
   * `single-writer`: the batch's transaction is the only writer (SQLite's BEGIN IMMEDIATE), so
   * reads lock nothing of their own (SQLite has no FOR UPDATE). In a summary-then-change
   * plan, `row-locks` reads the summary's CTE `batch` FOR UPDATE (a plain CTE: MariaDB has no
   * NOT MATERIALIZED) and archive's change takes the held rows by count (DELETE ... LIMIT);
   * `single-writer` reads it NOT MATERIALIZED and changes by range alone.
   */
  readonly exclusion: 'row-locks' | 'single-writer'
  /**
   * How a batch's (created_at, id) bounds are written. `row-values`: `(created_at, id) > (?, ?)`
   * (InnoDB's created_at index ends with the primary key, and MariaDB plans the OR form on a
   * small table as an index_merge with a primary-key range that reads, and locks, rows outside
   * the batch: seen, a batch's DELETE waiting on the next batch's first row while another
   * session held it). `or-terms`: `created_at >= ? AND (created_at > ? OR id > ?)` (PostgreSQL
   * uses row values only with a two-column index, which created_at alone is not). Either way
   * with a created_at term of its own, so a created_at index serves it.
   */
  readonly keysetBounds: 'row-values' | 'or-terms'
  /**
   * How an INSERT takes over a row whose key exists (archive: an id the archive holds already,
   * archived before and then written again or brought back, takes the newer copy).
   * `on-conflict`: ON CONFLICT (id) DO UPDATE SET c = excluded.c (PostgreSQL, SQLite), the
   * affected-row count 1 per row. `on-duplicate-key`: ON DUPLICATE KEY UPDATE c = VALUES(c)
   * (MySQL), whose affected-row count has 2 for a row it updated.
   */
  readonly upsert: 'on-conflict' | 'on-duplicate-key'
  /**
   * Batches commit without waiting for the disk, and one commit that waits, after the last
   * batch, makes all of them durable at once: `relax` runs first in each batch's transaction,
   * `flush` once after the loop (PostgreSQL: SET LOCAL synchronous_commit = off; a commit that
   * has a transaction id flushes the WAL through every earlier commit). A server crash before
   * the flush loses whole batches only, never part of one: archived rows are then still in
   * the outbox, replayed ones still as they were, and a rerun does them again. Absent (each
   * batch commits as usual) where the server has no per-transaction switch (MariaDB/MySQL: the
   * flush policy is global) or none is needed (SQLite in WAL mode with synchronous=NORMAL).
   */
  readonly relaxedCommit?: {relax: Sql; flush: Sql}
  /**
   * A connection setting for a whole run, whose batches commit back to back: `read` returns
   * its current value (one row, one column), `set(n)` sets it; the run sets `during` first and
   * puts back what it read last, whatever happens. `settle`, if given, runs once after a run
   * that ends normally and committed a batch, once the setting is back. SQLite: checkpoint the
   * WAL every 10,000 pages (~40 MB) instead of every 1,000, so a page several batches touch is
   * copied into the database once per checkpoint, not once per few batches; `settle` is a
   * PASSIVE checkpoint, so the run copies its last WAL pages into the database itself instead
   * of leaving up to 10,000 of them to the next writer's commit (a relay's, say). Absent: none.
   */
  readonly runSetting?: {read: Sql; set(value: number): Sql; during: number; settle?: Sql}
}

/**
 * One statement per batch (data-modifying CTEs). src/ops writes CTE `batch` (id, event_type,
 * created_at: the next rows after the cursor, MATERIALIZED so its LIMIT bounds them),
 * `batch_last` (its last row in (created_at, id) order) and `changed` (the rows the statement
 * changed, same columns), then appends `summary`. A batch that returns its rows instead
 * (RETURNING, in no order) takes the greatest (created_at, id) as its cursor, so `exactTime`
 * must write text that sorts like the timestamp.
 */
export interface OneStatementPlan extends PlanBase {
  readonly kind: 'one-statement'
  /**
   * The statement's closing SELECT, one row (BatchSummaryRow) over CTEs `batch`, `batch_last`
   * and `changed`: `skipped_ids` are rows of `batch` not in `changed`, the cursor is
   * `batch_last`'s row.
   */
  summary(wanted: SummaryWanted): SummaryQuery<BatchSummaryColumns>
  /**
   * SQL predicate: the row's id is one of CTE `batch`'s ids, planned as one primary-key lookup
   * per id (a batch that returns its rows picks them so).
   */
  readonly idInBatch: string
}

/**
 * A summary read, then a change in the same transaction. src/ops writes CTE `batch` (id,
 * event_type, created_at, and the SUMMARY_INPUT columns: `skip` always, `locator` where the
 * plan has one and the summary wants a span, `unchanged` where `updateCounts` is 'changed';
 * read FOR UPDATE under `row-locks` exclusion) and appends `summary`.
 */
export interface SummaryThenChangePlan extends PlanBase {
  readonly kind: 'summary-then-change'
  /**
   * The closing SELECT, one row (BatchSummaryRow) over CTE `batch`: the counts leave out rows
   * with `skip` 1, whose ids go to `skipped_ids`; `read_at` is the database clock as the
   * render part's `now` gives it within this statement (fixed for the statement), so `skip`
   * can judge leases by `now` and the change judges them at the same instant, without a round
   * trip of its own for the clock; `span_lo` and `span_hi` (see `locator`) only where
   * `wanted.span`, and `unchanged` only where `updateCounts` is 'changed'.
   */
  summary(wanted: SummaryWanted & {span: boolean}): SummaryQuery<ReadSummaryColumns>
  /**
   * What UPDATE's affected-row count counts. `matched`: every row its WHERE matched.
   * `changed`: only rows whose values it changed (MySQL without CLIENT_FOUND_ROWS, which our
   * pool turns off), so a replayed row that was already deliverable is not counted: CTE
   * `batch` then has `unchanged` (1 for such a row), the summary returns their number as
   * `unchanged`, and the change must report the rest.
   */
  readonly updateCounts: 'matched' | 'changed'
  /**
   * A row's physical address, in which rows inserted one after another sit side by side. The
   * summary reports the locator span of the rows to change; where that span is tight the
   * change reads the table by locator range instead of walking the created_at index with a
   * row lookup per entry. Absent: the change always goes through the indexes.
   */
  readonly locator?: RowLocator
}

/**
 * `row-number` (SQLite's rowid): a numeric `column`; the change names the table followed by
 * `onlyByLocator` (NOT INDEXED) and src/ops judges a span tight when it is at most twice the
 * batch's rows. `primary-key` (InnoDB, whose rows are stored in id order): the id is the
 * locator; the summary returns the span only where the batch's ids ascend in its order (so an
 * id range is the batch), and row-by-row batches whose ids ascend are read as an id range too.
 * `updates`: an UPDATE (replay) reads by span as well; archive's copy and delete always do.
 */
export type RowLocator = {kind: 'row-number'; column: string; onlyByLocator: string; updates: boolean} | {kind: 'primary-key'; updates: boolean}

/** What a batch summary returns besides its counts (BatchPlan's `summary`). */
export interface SummaryWanted {
  /** the first changed rows, at most this many (`sample`) */
  sample: number
  /** the ids of rows read but not changed, at most this many (`skipped_ids`) */
  listed: number
}

/**
 * The one row a batch summary returns, as the drivers hand it back. Its one definition: a
 * plan's `summary` gives an SQL expression per column under these names (SummaryQuery), and
 * src/ops renders the SELECT from them and reads the row back by them (readSummary).
 */
export interface BatchSummaryRow {
  /** rows the batch read */
  seen: DbCount
  /** rows it changed */
  changed: DbCount
  /** summary-then-change with updateCounts 'changed': of the changed rows, those the change finds as it leaves them */
  unchanged?: DbCount | null
  /** JSON object: event type to rows changed (a type may appear with 0); NULL when none */
  by_type: DbJson<Record<string, number>> | null
  /** JSON array of the first `wanted.sample` changed rows (in any order: readSummary sorts them) */
  sample: DbJson<SummarySampleRow[]> | null
  /** JSON array of at most `wanted.listed` ids of rows read but not changed, first in (created_at, id) order */
  skipped_ids: DbJson<string[]> | null
  /** the batch's last row in (created_at, id) order: created_at as `exactTime` writes it (NULL: the batch was empty) */
  cursor_at: string | null
  cursor_id: string | null
  /** summary-then-change: the smallest and largest locator of the rows to change (RowLocator) */
  span_lo?: number | string | null
  span_hi?: number | string | null
  /** summary-then-change: the database clock the summary judged leases at, as text the change binds back */
  read_at?: string | null
}

/** One sampled row inside BatchSummaryRow.sample: created_at as ISO-8601 text at full precision. */
export interface SummarySampleRow {
  id: string
  event_type: string
  created_at: string
}

/** A count as a driver returns it: a number, or numeric text (MySQL's SUM is DECIMAL). */
type DbCount = number | string
/** JSON as a driver returns it: parsed (pg's json) or as text (MySQL, SQLite). */
type DbJson<T> = T | string

export type SummaryColumn = keyof BatchSummaryRow

/** The row's columns every summary returns (BatchSummaryRow's required members). */
type EverySummary = {[K in SummaryColumn]-?: undefined extends BatchSummaryRow[K] ? never : K}[SummaryColumn]

/** The columns every summary returns, one SQL expression each. */
export type BatchSummaryColumns = Record<EverySummary, string>

/** A summary-then-change summary's columns: also `read_at`; `unchanged` and the span where its plan and `wanted` say. */
export type ReadSummaryColumns = BatchSummaryColumns & {read_at: string} & Partial<Record<Exclude<SummaryColumn, EverySummary | 'read_at'>, string>>

/** A summary as a plan gives it: an expression per column of the row, and the FROM clause they read. */
export interface SummaryQuery<Columns> {
  columns: Columns
  from: string
}

/**
 * The columns src/ops adds to CTE `batch` for a summary-then-change summary to read, besides
 * id, event_type and created_at.
 */
export const SUMMARY_INPUT = {
  /** 1 for a row the change will leave alone (leased: replay), else 0 */
  skip: 'skip',
  /** the row's locator (RowLocator), where the plan has one and the summary wants a span */
  locator: 'locator',
  /** 1 for a row the change finds as it leaves it (updateCounts 'changed'), else 0 */
  unchanged: 'unchanged',
} as const
