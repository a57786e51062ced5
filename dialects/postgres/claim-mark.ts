// postgres: the claim's low-water mark (ClaimMarkPart in dialects/relay.ts). Under a held xid
// (a long report, an idle-in-transaction session) the pending index keeps an entry for every
// event published since, and a claim from the start of the index walks them all; from the mark
// it walks only what was published since the mark last moved (bench/results/horizon.md).
import type {ClaimMarkPart, TableNames} from '../dialect.js'
import {raw, sql} from '../sql.js'
import {table} from './render.js'

const NONE = '-infinity'

/**
 * An uncommitted INSERT holds ROW EXCLUSIVE on the table until its transaction ends, and its
 * created_at (clock_timestamp() at the insert) is after its transaction's start; a writer that
 * takes the lock after this read dates its events after now(). A holder whose start cannot be
 * read gives no bound: a prepared transaction (no backend, pid NULL), or a session of another
 * role when ours lacks pg_read_all_stats (pg_stat_activity hides its state and xact_start).
 * pg_locks lists fast-path locks too. Our own backend is left out: it holds nothing between
 * statements.
 *
 * pg_locks and pg_stat_activity are read at two different instants, so a writer we can see may
 * show a lock in one and no transaction (xact_start NULL, state idle or just active) in the
 * other. Either way it bounds nothing: read first, pg_stat_activity says it was outside a
 * transaction after our now(), so the rows under the lock seen later were inserted after now();
 * read second, the transaction that held the lock has ended (xact_start is set before a lock is
 * taken and cleared after they are released), and its rows are visible to next()'s snapshot.
 * Read as "no bound" it sent the mark to -infinity in 2.2% of reads with 24 producers committing
 * (3,252 reads, 73 of them), each costing two walks of every entry a held xid keeps: the
 * pressure run's p99 (BENCHMARKS.md, the 10-minute run).
 */
const writersBound = (names: TableNames) =>
  sql`SELECT CASE WHEN bool_or(l.locktype IS NOT NULL AND a.xact_start IS NULL AND (a.state IS NULL OR a.state = 'disabled'))
  THEN ${NONE}::timestamptz ELSE least(now(), min(a.xact_start)) END::text AS bound
FROM (SELECT 1) one
LEFT JOIN pg_locks l ON l.locktype = 'relation' AND l.relation = ${table(names, 'outbox')}::regclass
  AND l.mode = 'RowExclusiveLock' AND l.pid IS DISTINCT FROM pg_backend_pid()
LEFT JOIN pg_stat_activity a ON a.pid = l.pid`

// The literal `published_at IS NULL AND failed_at IS NULL` lets it read the partial pending index.
// The oldest by ORDER BY ... LIMIT 1, not min(): the same index scan, but min() is planned twice
// (as an aggregate and as that scan), every partition each time: planning the walk from
// -infinity over 39 daily partitions took 2.6-7.6 ms against 1.5-2.1 ms (EXPLAIN (SUMMARY),
// alternated 8 times, load ~10; unpartitioned 0.16 against 0.08-0.15 ms).
const next = (names: TableNames, old: string, bound: string) =>
  sql`SELECT least(${bound}::timestamptz, (
  SELECT created_at FROM ${raw(table(names, 'outbox'))}
  WHERE created_at >= ${old}::timestamptz AND published_at IS NULL AND failed_at IS NULL
  ORDER BY created_at LIMIT 1
))::text AS mark`

export const claimMark: ClaimMarkPart = {none: NONE, bound: 'writers', writersBound, next}
