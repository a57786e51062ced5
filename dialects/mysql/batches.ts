// mysql: what `outbox status`, `failed`, `replay` and `archive` need of the database (BatchesPart).
import {SUMMARY_INPUT, type BatchesPart, type ReadSummaryColumns, type SummaryQuery, type SummaryThenChangePlan, type SummaryWanted} from '../batches.js'
import {exactTime, NOW} from './render.js'

// no data-modifying CTEs: the summary's read locks the batch, the change follows
const plan: SummaryThenChangePlan = {
  kind: 'summary-then-change',
  exclusion: 'row-locks',
  // the OR form plans as an index_merge on a small table, reading and locking rows outside the batch
  keysetBounds: 'row-values',
  upsert: 'on-duplicate-key',
  // the pool turns CLIENT_FOUND_ROWS off
  updateCounts: 'changed',
  // InnoDB stores rows in id order: a batch whose ids follow its (created_at, id) order is an
  // id range. Archive's copy and delete gain from reading it so; replay's UPDATE does not, so
  // its summary skips the span and the descent count that costs (BENCHMARKS.md, figures behind the code's choices).
  locator: {kind: 'primary-key', updates: false},
  // no relaxedCommit: the flush policy is a global setting on MariaDB/MySQL
  summary: (wanted) => summary(wanted),
}

export const batches: BatchesPart = {
  // The claim index (published_at, failed_at, created_at, id) already serves status's
  // pending, failed and published-window ranges: no extra index on this dialect.
  secondsBetween: (from, to) => `(TIMESTAMPDIFF(MICROSECOND, ${from}, ${to}) / 1000000)`,
  // the pool's sessions run at READ COMMITTED: SET TRANSACTION (no SESSION) changes the next
  // transaction only; WITH CONSISTENT SNAPSHOT takes the snapshot at the start, not the first read
  snapshotBegin: ['SET TRANSACTION ISOLATION LEVEL REPEATABLE READ', 'START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT'],
  prepareReads: false,
  // mysql2 parses DATETIME(6) into a millisecond Date; the cursor needs the microseconds.
  exactTime,
  plan,
}

const {skip, locator, unchanged} = SUMMARY_INPUT

/**
 * A batch summed up over CTE `batch` (read FOR UPDATE), one pass: a GROUP BY per type, summed
 * up. The last row comes from max(CONCAT(created_at, id)): a DATETIME(6) always prints 26
 * characters, so the key orders like (created_at, id) and splits at a fixed place (both
 * strings take the id's ascii_bin collation). The locator span is only returned where the
 * batch's ids ascend in its order (time-ordered ids, as idsAscend in src/ops) and its first
 * and last rows are rows to change, which is when an id range is the batch; else (random ids,
 * a leased row at either end) the change goes through the indexes. First and last ids alone
 * were not enough: random ids put them at the ends of a small batch by chance (1 in 42 for 7
 * rows), and the id range then ran over the table, waiting on locks of rows outside the batch.
 * The descent count (LAG sorts the batch) is the price of never reading a random-id batch as
 * an id range, paid only where the change reads by span (`span`: archive, not replay).
 * read_at: MySQL and MariaDB fix UTC_TIMESTAMP(6) at the statement's start, so it is the
 * instant `skip` judged leases at. MySQL 8 has no ORDER BY inside JSON_ARRAYAGG: the sample
 * and the listed ids are the right rows (ORDER BY ... LIMIT in a derived table) and
 * readSummary puts the sample in order.
 */
function summary({sample, listed, span}: SummaryWanted & {span: boolean}): SummaryQuery<ReadSummaryColumns> {
  const inOrder = 'descents = 0 AND SUBSTRING(first_key, 27) = span_lo AND SUBSTRING(last_key, 27) = span_hi'
  // without a span, neither the locator nor the descent count (LAG sorts the batch)
  const spans = span
    ? {
        sums: ', MIN(lo) AS span_lo, MAX(hi) AS span_hi, MIN(first_key) AS first_key, SUM(descents) AS descents',
        groups: `, MIN(CASE WHEN ${skip} = 0 THEN ${locator} END) AS lo, MAX(CASE WHEN ${skip} = 0 THEN ${locator} END) AS hi,
      MIN(CONCAT(created_at, id)) AS first_key, SUM(descends) AS descents`,
        rows: '(SELECT batch.*, CASE WHEN id < LAG(id) OVER (ORDER BY created_at, id) THEN 1 ELSE 0 END AS descends FROM batch) b',
      }
    : {sums: '', groups: '', rows: 'batch'}
  const columns: ReadSummaryColumns = {
    seen: 'seen',
    changed: 'changed',
    unchanged: 'unchanged',
    by_type: 'by_type',
    read_at: exactTime(NOW),
    ...(span && {span_lo: `CASE WHEN ${inOrder} THEN span_lo END`, span_hi: `CASE WHEN ${inOrder} THEN span_hi END`}),
    cursor_at: 'LEFT(last_key, 26)',
    cursor_id: 'SUBSTRING(last_key, 27)',
    sample:
      sample > 0
        ? `(SELECT JSON_ARRAYAGG(JSON_OBJECT('id', id, 'event_type', event_type, 'created_at', DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%s.%fZ'))) FROM (SELECT id, event_type, created_at FROM batch WHERE ${skip} = 0 ORDER BY created_at, id LIMIT ${Number(sample)}) s)`
        : "'[]'",
    skipped_ids:
      listed > 0
        ? `CASE WHEN seen = changed THEN '[]' ELSE (SELECT JSON_ARRAYAGG(id) FROM (SELECT id FROM batch WHERE ${skip} = 1 ORDER BY created_at, id LIMIT ${Number(listed)}) s) END`
        : "'[]'",
  }
  return {
    columns,
    from: `(
  SELECT SUM(n) AS seen, SUM(n - skipped) AS changed, SUM(unchanged) AS unchanged, JSON_OBJECTAGG(event_type, n - skipped) AS by_type,
    MAX(last_key) AS last_key${spans.sums}
  FROM (
    SELECT event_type, COUNT(*) AS n, SUM(${skip}) AS skipped, SUM(CASE WHEN ${skip} = 0 THEN ${unchanged} ELSE 0 END) AS unchanged,
      MAX(CONCAT(created_at, id)) AS last_key${spans.groups}
    FROM ${spans.rows}
    GROUP BY event_type
  ) g
) t`,
  }
}
