// postgres: what `outbox status`, `failed`, `replay` and `archive` need of the database (BatchesPart).
import type {BatchesPart} from '../batches.js'
import {sql} from '../sql.js'
import {exactUtc} from './render.js'

export const batches: BatchesPart = {
  // EXTRACT returns numeric on PostgreSQL 14+, which pg hands back as a string.
  secondsBetween: (from, to) => `EXTRACT(EPOCH FROM (${to} - ${from}))::double precision`,
  // pg parses timestamptz into a millisecond Date; the cursor needs the microseconds.
  exactTime: exactUtc,
  writableCte: true,
  upsert: {style: 'on-conflict', updatedCountsTwice: false},
  clusteredById: false,
  keysetRowValues: false,
  relaxedBatchCommit: {relax: sql`SET LOCAL synchronous_commit = off`, flush: sql`SELECT txid_current() AS flushed_through`},
  // the cursor comes from CTE batch_last, which every one-statement batch defines: sorting the
  // batch a second time for it cost ~0.4 ms of a ~5.5 ms 1000-row archive batch
  batchSummary: ({sample, listed}) => {
    const exact = exactUtc
    return `SELECT
  (SELECT COUNT(*) FROM batch) AS seen,
  (SELECT COUNT(*) FROM changed) AS changed,
  (SELECT json_object_agg(event_type, n) FROM (SELECT event_type, COUNT(*) AS n FROM changed GROUP BY event_type) t) AS by_type,
  (SELECT json_agg(json_build_object('id', id, 'event_type', event_type, 'created_at', ${exact('created_at')})) FROM (SELECT id, event_type, created_at FROM changed ORDER BY created_at, id LIMIT ${Number(sample)}) s) AS sample,
  (SELECT json_agg(id) FROM (SELECT b.id FROM batch b WHERE NOT EXISTS (SELECT 1 FROM changed c WHERE c.id = b.id) ORDER BY b.created_at, b.id LIMIT ${Number(listed)}) s) AS skipped_ids,
  last.cursor_at, last.id AS cursor_id
FROM (SELECT 1) one LEFT JOIN (SELECT ${exact('created_at')} AS cursor_at, id FROM batch_last) last ON true`
  },
}
