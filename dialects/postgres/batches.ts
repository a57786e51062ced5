// postgres: what `outbox status`, `failed`, `replay` and `archive` need of the database (BatchesPart).
import type {BatchesPart, OneStatementPlan} from '../batches.js'
import {sql} from '../sql.js'
import {exactUtc} from './render.js'

// data-modifying CTEs: a batch is read, changed and summed up by one statement
const plan: OneStatementPlan = {
  kind: 'one-statement',
  exclusion: 'row-locks',
  // row values would need a (created_at, id) index; created_at alone serves the OR form
  keysetBounds: 'or-terms',
  upsert: 'on-conflict',
  // a primary-key lookup per id; `IN (SELECT ...)` may plan a full scan per batch
  idInBatch: 'id = ANY(ARRAY(SELECT id FROM batch))',
  relaxedCommit: {relax: sql`SET LOCAL synchronous_commit = off`, flush: sql`SELECT txid_current() AS flushed_through`},
  // the cursor comes from CTE batch_last, which every one-statement batch defines: sorting the
  // batch a second time for it costs more (BENCHMARKS.md, figures behind the code's choices, postgres summary)
  summary: ({sample, listed}) => ({
    columns: {
      seen: '(SELECT COUNT(*) FROM batch)',
      changed: '(SELECT COUNT(*) FROM changed)',
      by_type: '(SELECT json_object_agg(event_type, n) FROM (SELECT event_type, COUNT(*) AS n FROM changed GROUP BY event_type) t)',
      sample: `(SELECT json_agg(json_build_object('id', id, 'event_type', event_type, 'created_at', ${exactUtc('created_at')})) FROM (SELECT id, event_type, created_at FROM changed ORDER BY created_at, id LIMIT ${Number(sample)}) s)`,
      skipped_ids: `(SELECT json_agg(id) FROM (SELECT b.id FROM batch b WHERE NOT EXISTS (SELECT 1 FROM changed c WHERE c.id = b.id) ORDER BY b.created_at, b.id LIMIT ${Number(listed)}) s)`,
      cursor_at: 'last.cursor_at',
      cursor_id: 'last.id',
    },
    from: `(SELECT 1) one LEFT JOIN (SELECT ${exactUtc('created_at')} AS cursor_at, id FROM batch_last) last ON true`,
  }),
}

function finiteMs(ms: number): number {
  if (!Number.isFinite(ms)) throw new RangeError(`not a duration in milliseconds: ${ms}`)
  return ms
}

export const batches: BatchesPart = {
  // EXTRACT returns numeric on PostgreSQL 14+, which pg hands back as a string.
  secondsBetween: (from, to) => `EXTRACT(EPOCH FROM (${to} - ${from}))::double precision`,
  // the snapshot is taken at the transaction's first statement; now() is its start, constant
  snapshotBegin: ['BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY'],
  prepareReads: true,
  // now() is the transaction's start: the same in every statement of the snapshot
  snapshotAgo: (ms) => `now() - interval '${finiteMs(ms)} milliseconds'`,
  // plan_cache_mode for this transaction only: the server's setting stays as it is
  snapshotFirst: sql`SET LOCAL plan_cache_mode = force_generic_plan`,
  // pg parses timestamptz into a millisecond Date; the cursor needs the microseconds.
  exactTime: exactUtc,
  plan,
}
