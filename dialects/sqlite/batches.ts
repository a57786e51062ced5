// sqlite: what `outbox status`, `failed`, `replay` and `archive` need of the database (BatchesPart).
import type {BatchesPart} from '../batches.js'
import {raw, sql} from '../sql.js'
import {NOW} from './render.js'

export const batches: BatchesPart = {
  // julianday is a double: about 50 µs of error today, below the milliseconds we store.
  secondsBetween: (from, to) => `((julianday(${to}) - julianday(${from})) * 86400.0)`,
  // stored as ISO-8601 text already: exact as it is
  exactTime: (column) => column,
  writableCte: false,
  upsert: {style: 'on-conflict', updatedCountsTwice: false},
  // rowid order; the id primary key is a separate index
  clusteredById: false,
  keysetRowValues: false,
  batchRunSetting: {
    read: sql`PRAGMA wal_autocheckpoint`,
    // PRAGMA takes no bound parameters: a validated integer, inlined
    set: (pages) => sql`PRAGMA wal_autocheckpoint = ${raw(String(pagesOrThrow(pages)))}`,
    during: 10_000,
    settle: sql`PRAGMA wal_checkpoint(PASSIVE)`,
  },
  rowLocator: {column: 'rowid', onlyByLocator: ' NOT INDEXED', updates: true},
  // Read before the change (no writable CTEs), in one pass over the batch: a GROUP BY per type,
  // summed up. Handing the 1000 rows to JavaScript instead cost more than this whole summary
  // (1.9 against 1.5 ms in the same run), a MATERIALIZED batch read by several subqueries
  // 1.6 ms. The last row comes from max(created_at || char(1) || id): char(1) sorts below
  // every character of a timestamp, so this max is the (created_at, id) maximum even if
  // created_at widths differ. The sample and skipped rows read the batch a second time, only
  // in the batches that need them (the first; one with leased rows); CASE evaluates lazily.
  // read_at: 'now' is the same for every call within one sqlite3_step, which computes this row.
  batchSummary: ({sample, listed}) => `SELECT seen, changed, by_type, span_lo, span_hi, ${NOW} AS read_at,
  substr(last_key, 1, instr(last_key, char(1)) - 1) AS cursor_at, substr(last_key, instr(last_key, char(1)) + 1) AS cursor_id,
  ${sample > 0 ? `(SELECT json_group_array(json_object('id', id, 'event_type', event_type, 'created_at', created_at)) FROM (SELECT id, event_type, created_at FROM batch WHERE skip = 0 ORDER BY created_at, id LIMIT ${Number(sample)}))` : "'[]'"} AS sample,
  ${listed > 0 ? `CASE WHEN seen = changed THEN '[]' ELSE (SELECT json_group_array(id) FROM (SELECT id FROM batch WHERE skip = 1 ORDER BY created_at, id LIMIT ${Number(listed)})) END` : "'[]'"} AS skipped_ids
FROM (
  SELECT sum(n) AS seen, sum(n - skipped) AS changed, json_group_object(event_type, n - skipped) FILTER (WHERE n > skipped) AS by_type,
    min(lo) AS span_lo, max(hi) AS span_hi, max(last_key) AS last_key
  FROM (
    SELECT event_type, COUNT(*) AS n, sum(skip) AS skipped, min(CASE WHEN skip = 0 THEN locator END) AS lo, max(CASE WHEN skip = 0 THEN locator END) AS hi,
      max(created_at || char(1) || id) AS last_key
    FROM batch GROUP BY event_type
  )
)`,
}

function pagesOrThrow(pages: number): number {
  if (!Number.isSafeInteger(pages) || pages < 0) throw new RangeError(`invalid wal_autocheckpoint ${pages}`)
  return pages
}
