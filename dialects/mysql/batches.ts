// mysql: what `outbox status`, `failed`, `replay` and `archive` need of the database (BatchesPart).
import type {BatchesPart} from '../batches.js'
import {exactTime, NOW} from './render.js'

export const batches: BatchesPart = {
  // The claim index (published_at, failed_at, created_at, id) already serves status's
  // pending, failed and published-window ranges: no extra index on this dialect.
  secondsBetween: (from, to) => `(TIMESTAMPDIFF(MICROSECOND, ${from}, ${to}) / 1000000)`,
  // mysql2 parses DATETIME(6) into a millisecond Date; the cursor needs the microseconds.
  exactTime,
  writableCte: false,
  upsert: {style: 'on-duplicate-key', updatedCountsTwice: true},
  clusteredById: true,
  keysetRowValues: true,
  batchReadLocks: true,
  updateCountsChangedRows: true,
  // InnoDB stores rows in id order: a batch whose ids follow its (created_at, id) order is an id
  // range. Archive's copy and delete gain from reading it so (Dialect.clusteredById); replay's
  // UPDATE does not (1000 rows: 6.6 ms by id range, 6.4 through the created_at index), so its
  // summary skips the span and the descent count that costs (5.0 against 3.8 ms a summary).
  rowLocator: {column: 'id', onlyByLocator: '', updates: false},
  batchSummary: ({sample, listed, span = true}) => batchSummary(sample, listed, span),
}

/**
 * A batch summed up over CTE `batch` (read FOR UPDATE), one pass: a GROUP BY per type, summed
 * up. The last row comes from max(CONCAT(created_at, id)): a DATETIME(6) always prints 26
 * characters, so the key orders like (created_at, id) and splits at a fixed place (both
 * strings take the id's ascii_bin collation). The locator span is only returned where the
 * batch's ids ascend in its order (time-ordered ids, as idsAscend in archive.ts) and its first
 * and last rows are rows to change, which is when an id range is the batch; else (random ids,
 * a leased row at either end) the change goes through the indexes. First and last ids alone
 * were not enough: random ids put them at the ends of a small batch by chance (1 in 42 for 7
 * rows), and the id range then ran over the table, waiting on locks of rows outside the batch.
 * This summary costs ~0.5 ms a batch more on the server than reading the 1000 rows, and
 * saves about as much parsing them in JavaScript; the descent count (LAG sorts the batch) adds
 * ~1 ms more (1000 rows, locked, quiet server: 3.7 ms p10 / 5.6 p50 against 2.7 / 4.1), the
 * price of never reading a random-id batch as an id range; paid only where the change reads
 * by span (`span`: archive, not replay). read_at: MySQL and MariaDB fix
 * UTC_TIMESTAMP(6) at the statement's start, so it is the instant `skip` judged leases at.
 * MySQL 8 has no ORDER BY inside JSON_ARRAYAGG: the sample and the listed ids are the right
 * rows (ORDER BY ... LIMIT in a derived table) and readSummary puts the sample in order.
 */
function batchSummary(sample: number, listed: number, span: boolean): string {
  const inOrder = 'descents = 0 AND SUBSTRING(first_key, 27) = span_lo AND SUBSTRING(last_key, 27) = span_hi'
  // without a span, neither the locator nor the descent count (LAG sorts the batch)
  const spans = span
    ? {
        out: `CASE WHEN ${inOrder} THEN span_lo END AS span_lo, CASE WHEN ${inOrder} THEN span_hi END AS span_hi,`,
        sums: ', MIN(lo) AS span_lo, MAX(hi) AS span_hi, MIN(first_key) AS first_key, SUM(descents) AS descents',
        groups: `, MIN(CASE WHEN skip = 0 THEN locator END) AS lo, MAX(CASE WHEN skip = 0 THEN locator END) AS hi,
      MIN(CONCAT(created_at, id)) AS first_key, SUM(descends) AS descents`,
        rows: '(SELECT batch.*, CASE WHEN id < LAG(id) OVER (ORDER BY created_at, id) THEN 1 ELSE 0 END AS descends FROM batch) b',
      }
    : {out: '', sums: '', groups: '', rows: 'batch'}
  return `SELECT seen, changed, unchanged, by_type, ${exactTime(NOW)} AS read_at, ${spans.out}
  LEFT(last_key, 26) AS cursor_at, SUBSTRING(last_key, 27) AS cursor_id,
  ${sample > 0 ? `(SELECT JSON_ARRAYAGG(JSON_OBJECT('id', id, 'event_type', event_type, 'created_at', DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%s.%fZ'))) FROM (SELECT id, event_type, created_at FROM batch WHERE skip = 0 ORDER BY created_at, id LIMIT ${Number(sample)}) s)` : "'[]'"} AS sample,
  ${listed > 0 ? `CASE WHEN seen = changed THEN '[]' ELSE (SELECT JSON_ARRAYAGG(id) FROM (SELECT id FROM batch WHERE skip = 1 ORDER BY created_at, id LIMIT ${Number(listed)}) s) END` : "'[]'"} AS skipped_ids
FROM (
  SELECT SUM(n) AS seen, SUM(n - skipped) AS changed, SUM(unchanged) AS unchanged, JSON_OBJECTAGG(event_type, n - skipped) AS by_type,
    MAX(last_key) AS last_key${spans.sums}
  FROM (
    SELECT event_type, COUNT(*) AS n, SUM(skip) AS skipped, SUM(CASE WHEN skip = 0 THEN unchanged ELSE 0 END) AS unchanged,
      MAX(CONCAT(created_at, id)) AS last_key${spans.groups}
    FROM ${spans.rows}
    GROUP BY event_type
  ) g
) t`
}
