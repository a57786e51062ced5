// BatchesPart: what the operations commands (status, failed, replay, archive) need of a
// database beyond portable SQL. Each member is a contract: its meaning, and what the code in
// src/ops does with it.
import type {Sql} from './sql.js'

export interface BatchesPart {
  /** SQL expression: seconds (fractional) from one timestamp expression to another */
  secondsBetween(from: string, to: string): string
  /**
   * SQL expression: a timestamp column as text that, bound back as a parameter, compares
   * equal to the stored value (full precision), for keyset cursors over (created_at, id).
   */
  exactTime(column: string): string
  /**
   * data-modifying CTEs (WITH moved AS (DELETE ... RETURNING) INSERT ...): archive moves a
   * batch in one statement, with no separate locking read (PostgreSQL only)
   */
  readonly writableCte: boolean
  /**
   * How an INSERT takes over a row whose key exists (archive: an id the archive holds already,
   * archived before and then written again or brought back, takes the newer copy): `on-conflict`
   * (PostgreSQL, SQLite: ON CONFLICT (id) DO UPDATE SET c = excluded.c) or `on-duplicate-key`
   * (MySQL: ON DUPLICATE KEY UPDATE c = VALUES(c)). `updatedCountsTwice`: the statement's
   * affected-row count has 2 for a row it updated (MySQL), 1 elsewhere.
   */
  readonly upsert: {style: 'on-conflict' | 'on-duplicate-key'; updatedCountsTwice: boolean}
  /**
   * Rows are stored in primary-key order (InnoDB's clustered index), so a batch that is also
   * an id range is read in place instead of through one primary-key lookup per row of a
   * created_at index range (MariaDB archive of 300k rows in 1000-row batches, interleaved runs:
   * copy 5.8-6.2 ms and delete 5.9-6.3 ms a batch against 6.8-7.2 and 8.1-8.2)
   */
  readonly clusteredById: boolean
  /**
   * A batch's (created_at, id) bounds are written as row values, `(created_at, id) > (?, ?)`,
   * instead of `created_at > ? OR id > ?`: InnoDB's created_at index ends with the primary key,
   * and MariaDB plans the OR form on a small table as an index_merge with a primary-key range
   * that reads, and locks, rows outside the batch (seen: a batch's DELETE waiting on the next
   * batch's first row while another session held it). PostgreSQL uses row values only with a
   * two-column index, which created_at alone is not.
   */
  readonly keysetRowValues: boolean
  /**
   * The closing SELECT of a summarised batch, one row: seen, changed, by_type (JSON object),
   * sample (JSON array of the first `sample` changed rows), skipped_ids (JSON array, at most
   * `listed`, of rows read but not changed), cursor_at (exactTime) and cursor_id of the batch's
   * last row. A batch comes back to the client as one small row instead of one row per event,
   * which is what made batched archive and replay several times slower than one bulk
   * statement.
   *
   * With writableCte the statement changes the rows itself and the summary reads CTE `batch`
   * (the rows read: id, event_type, created_at), `batch_last` (its last row) and `changed`
   * (the rows changed, same columns). Without, the summary is read first and the change
   * follows over the batch's (created_at, id) range in the same transaction, which the
   * database keeps exact by having one writer (SQLite) or by the summary's read locking the
   * batch's rows (batchReadLocks): the summary then reads CTE `batch` alone (id, event_type,
   * created_at, skip: 1 for a row the change will leave alone, `locator` where the dialect has
   * a rowLocator, `unchanged` where updateCountsChangedRows), and also returns span_lo and
   * span_hi, the smallest and largest locator of the rows to be changed (and `unchanged`), and
   * read_at: the database clock as `now` gives it within this statement (fixed for the
   * statement on MySQL and SQLite), so `skip` can judge leases by `now` and the change binds
   * read_at to judge them at the same instant, without a round trip of its own for the clock.
   * `span: false` (the change will not read by span: rowLocator.updates): the summary may
   * leave span_lo and span_hi out, and `batch` has no `locator`.
   */
  batchSummary(options: SummaryWanted): string
  /**
   * Without writable CTEs, on a database with other writers (MySQL/MariaDB): the summary's
   * CTE `batch` reads FOR UPDATE, so the rows it sums up stay as read until the change in the
   * same transaction. A batch then comes back as one row instead of one per event: MariaDB
   * archive of 300k rows at --batch 1000 allocates ~110 KB of JavaScript per batch against
   * ~500 KB reading the rows (34 against 152 young-generation collections of 1 MB) and peaks at
   * 82 MB against 96, in about the same time. Over 1M rows V8 still grows its young generation
   * to the maximum (peak 93-98 MB either way; 70 MB with --max-semi-space-size=1).
   */
  readonly batchReadLocks?: boolean
  /**
   * UPDATE reports the rows it changed, not those it matched (MySQL without CLIENT_FOUND_ROWS,
   * which our pool turns off): a replayed row that was already deliverable is not counted,
   * so the summary also counts those (`unchanged`) and the change must report the rest.
   */
  readonly updateCountsChangedRows?: boolean
  /**
   * Archive and replay batches commit without waiting for the disk, and one commit that waits,
   * after the last batch, makes all of them durable at once: `relax` runs first in each batch's
   * transaction, `flush` once after the loop (PostgreSQL: SET LOCAL synchronous_commit = off;
   * a commit that has a transaction id flushes the WAL through every earlier commit). A server
   * crash before the flush loses whole batches only, never part of one: archived rows are
   * then still in the outbox, replayed ones still as they were, and a rerun does them again.
   * Absent where the server has no per-transaction switch (MariaDB/MySQL: the flush policy
   * is global) or none is needed (SQLite in WAL mode with synchronous=NORMAL).
   */
  readonly relaxedBatchCommit?: {relax: Sql; flush: Sql}
  /**
   * A connection setting for a whole archive or replay run, whose batches commit back to back:
   * `read` returns its current value (one row, one column), `set(n)` sets it; the run sets
   * `during` first and puts back what it read last. SQLite: checkpoint the WAL every 10,000
   * pages (~40 MB) instead of every 1,000, so a page several batches touch is copied into the
   * database once per checkpoint, not once per few batches (1M-row replay: 6.9 s against 7.5-8.2 s).
   * `settle`, if given, runs once after a run that ends normally, once the setting is back
   * (SQLite: a PASSIVE checkpoint, so the run copies its last WAL pages into the database
   * itself instead of leaving up to 10,000 of them to the next writer's commit, a relay's say).
   */
  readonly batchRunSetting?: {read: Sql; set(value: number): Sql; during: number; settle?: Sql}
  /**
   * A row's physical address (SQLite: rowid; InnoDB: the id, its clustered key), in which rows
   * inserted one after another sit side by side. Without writable CTEs a summarised batch
   * reports the locator span of the rows it will change; where that span is tight (SQLite:
   * numerically, forEachSummarisedBatch; MySQL: the summary returns it only when the ids follow
   * the batch's order), the change reads the table by locator range (`table + onlyByLocator`:
   * NOT INDEXED) instead of walking the created_at index with a row lookup per entry. SQLite
   * replay of 1M rows at --batch 1000, library, three interleaved runs: 4.4-4.6 s with it,
   * 4.7-4.8 s without (one-pass summary alone), 4.7-5.1 s before both; one bulk UPDATE 2.6-2.7 s.
   * `updates`: an UPDATE (replay) reads by span too; archive's copy and delete always do.
   */
  readonly rowLocator?: {column: string; onlyByLocator: string; updates: boolean}
}

/** What a batch summary returns besides its counts (Dialect.batchSummary). */
export interface SummaryWanted {
  /** the first changed rows, at most this many */
  sample: number
  /** the ids of rows read but not changed, at most this many */
  listed: number
  /** the locator span (default true, where the dialect has a rowLocator) */
  span?: boolean
}
