// sqlite: what `outbox status`, `failed`, `replay` and `archive` need of the database (BatchesPart).
import {SUMMARY_INPUT, type BatchesPart, type ReadSummaryColumns, type SummaryQuery, type SummaryThenChangePlan, type SummaryWanted} from '../batches.js'
import {raw, sql} from '../sql.js'
import {NOW} from './render.js'

// no data-modifying CTEs; the batch's BEGIN IMMEDIATE transaction is the only writer
const plan: SummaryThenChangePlan = {
  kind: 'summary-then-change',
  exclusion: 'single-writer',
  keysetBounds: 'or-terms',
  upsert: 'on-conflict',
  updateCounts: 'matched',
  // rowid order; the id primary key is a separate index
  locator: {kind: 'row-number', column: 'rowid', onlyByLocator: ' NOT INDEXED', updates: true},
  // no relaxedCommit: in WAL mode with synchronous=NORMAL a commit does not wait for the disk
  runSetting: {
    read: sql`PRAGMA wal_autocheckpoint`,
    // PRAGMA takes no bound parameters: a validated integer, inlined
    set: (pages) => sql`PRAGMA wal_autocheckpoint = ${raw(String(pagesOrThrow(pages)))}`,
    during: 10_000,
    settle: sql`PRAGMA wal_checkpoint(PASSIVE)`,
  },
  summary: (wanted) => summary(wanted),
}

export const batches: BatchesPart = {
  // julianday is a double: about 50 µs of error today, below the milliseconds we store.
  secondsBetween: (from, to) => `((julianday(${to}) - julianday(${from})) * 86400.0)`,
  // stored as ISO-8601 text already: exact as it is
  exactTime: (column) => column,
  plan,
  // a deferred transaction reads one snapshot from its first read on (WAL; a rollback journal:
  // its shared lock keeps writers out until it ends); the file may be open read-only
  snapshotBegin: ['BEGIN DEFERRED'],
  // one process, no planning round trip to save
  prepareReads: false,
}

const {skip, locator} = SUMMARY_INPUT

/**
 * Read before the change, in one pass over the batch: a GROUP BY per type, summed up (cheaper
 * than handing the rows to JavaScript, or than a MATERIALIZED batch read by several
 * subqueries: BENCHMARKS.md, figures behind the code's choices). The last row comes from max(created_at || char(1) ||
 * id): char(1) sorts below every character of a timestamp, so this max is the (created_at, id)
 * maximum even if created_at widths differ. The sample and skipped rows read the batch a second
 * time, only in the batches that need them (the first; one with leased rows); CASE evaluates
 * lazily. read_at: 'now' is the same for every call within one sqlite3_step, which computes
 * this row.
 */
function summary({sample, listed, span}: SummaryWanted & {span: boolean}): SummaryQuery<ReadSummaryColumns> {
  const columns: ReadSummaryColumns = {
    seen: 'seen',
    changed: 'changed',
    by_type: 'by_type',
    ...(span && {span_lo: 'span_lo', span_hi: 'span_hi'}),
    read_at: NOW,
    cursor_at: 'substr(last_key, 1, instr(last_key, char(1)) - 1)',
    cursor_id: 'substr(last_key, instr(last_key, char(1)) + 1)',
    sample:
      sample > 0
        ? `(SELECT json_group_array(json_object('id', id, 'event_type', event_type, 'created_at', created_at)) FROM (SELECT id, event_type, created_at FROM batch WHERE ${skip} = 0 ORDER BY created_at, id LIMIT ${Number(sample)}))`
        : "'[]'",
    skipped_ids:
      listed > 0
        ? `CASE WHEN seen = changed THEN '[]' ELSE (SELECT json_group_array(id) FROM (SELECT id FROM batch WHERE ${skip} = 1 ORDER BY created_at, id LIMIT ${Number(listed)})) END`
        : "'[]'",
  }
  const spans = span
    ? {sums: ', min(lo) AS span_lo, max(hi) AS span_hi', groups: `, min(CASE WHEN ${skip} = 0 THEN ${locator} END) AS lo, max(CASE WHEN ${skip} = 0 THEN ${locator} END) AS hi`}
    : {sums: '', groups: ''}
  return {
    columns,
    from: `(
  SELECT sum(n) AS seen, sum(n - skipped) AS changed, json_group_object(event_type, n - skipped) FILTER (WHERE n > skipped) AS by_type,
    max(last_key) AS last_key${spans.sums}
  FROM (
    SELECT event_type, COUNT(*) AS n, sum(${skip}) AS skipped${spans.groups},
      max(created_at || char(1) || id) AS last_key
    FROM batch GROUP BY event_type
  )
)`,
  }
}

function pagesOrThrow(pages: number): number {
  if (!Number.isSafeInteger(pages) || pages < 0) throw new RangeError(`invalid wal_autocheckpoint ${pages}`)
  return pages
}
