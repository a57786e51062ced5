// postgres: the claim is one statement. FOR UPDATE SKIP LOCKED in a MATERIALIZED CTE picks
// and locks the batch, the UPDATE leases it and returns its rows, sorted.
import {CLAIMED_COLUMNS} from '../../src/schema/columns.js'
import {batchLimit, claimablePredicate, orderingPredicate, selectList} from '../shared.js'
import type {ClaimOptions, CreatedSpan, RelayPart, RetryInput, TableNames} from '../dialect.js'
import {inline, raw, sql, type Sql} from '../sql.js'
import {claimMark} from './claim-mark.js'
import {NOW, literal, msInterval, quoteIdent, table} from './render.js'

// pg would hand jsonb back parsed: as text, publishers forward it unchanged
const RETURNED = selectList(CLAIMED_COLUMNS, 't', {payload: 't.payload::text', headers: 't.headers::text'})

function claimStatement(names: TableNames, options: ClaimOptions): Sql {
  const outbox = table(names, 'outbox')
  // MATERIALIZED: the locked, limited set is computed once. An IN (SELECT ... LIMIT ...
  // FOR UPDATE SKIP LOCKED) may be re-evaluated per outer row and claim more than LIMIT
  // (PostgreSQL BUG #15715). RETURNING has no order: the rows come back sorted by the database,
  // to the microsecond, in the order the relay publishes them (a client sort had milliseconds).
  // created_at rides along, and the batch's created_at span bounds the UPDATE: on a partitioned
  // outbox the span prunes the partitions at run time, where a join by id alone planned a scan
  // of every partition (BENCHMARKS.md, the partitioned outbox's drain); the mark (fromMark) prunes
  // the ranges before it at plan time, and the carried mark its own span.
  // The carried mark (the previous batch's successes) runs in this statement, so claim and mark
  // share one commit. The rows it marked are left out: the claim's snapshot still reads them as
  // pending, and locking a row this statement updated fails (a lapsed lease would offer it).
  // They are left out as `NOT IN (SELECT id FROM m)`, not `id <> ALL($ids)`: the planner estimates
  // an array's every element against every partition's statistics, 60-70 ms of planning per
  // claim on 16 partitions against 7-11 ms (EXPLAIN ANALYZE, batch 100; the same on one table).
  const {mark} = options
  const head = mark ? sql`WITH m AS (
${markStatement(names, mark.ids, mark.createdAt)}
RETURNING id
), c` : sql`WITH c`
  const notMarked = (alias: string) => (mark ? sql` AND ${raw(alias)}.id NOT IN (SELECT id FROM m)` : sql``)
  return sql`${head} AS MATERIALIZED (
  SELECT e.id, e.created_at FROM ${raw(outbox)} e
  WHERE ${fromMark(options, 'e')}${claimablePredicate(NOW, 'e')}${notMarked('e')}${orderingPredicate(outbox, options, 'e', notMarked('o'))}
  ORDER BY e.created_at, e.id
  LIMIT ${batchLimit(options)}
  FOR UPDATE SKIP LOCKED
), leased AS (
UPDATE ${raw(outbox)} AS t
SET lease_owner = ${options.owner}, lease_until = ${raw(NOW)} + ${msInterval(options.leaseMs)}, attempts = t.attempts + 1
FROM c WHERE t.id = c.id AND t.created_at = c.created_at${fromMark(options, 't')}
  AND t.created_at BETWEEN (SELECT min(created_at) FROM c) AND (SELECT max(created_at) FROM c)
RETURNING ${raw(RETURNED)}
)
SELECT * FROM leased ORDER BY created_at, id`
}

/**
 * The low-water mark's bound: the pending index's scan starts there (claim-mark.ts). The lease
 * UPDATE repeats it (its rows come from that scan, so it changes none of them): on a partitioned
 * outbox its custom plan then leaves out, and plans none of, the ranges before the mark, where
 * the batch's span, known only at run time, pruned them after planning every one. Not on the
 * ordering check: a replayed event below the mark still holds its aggregate's newer ones back.
 */
function fromMark(options: ClaimOptions, alias: 'e' | 't'): Sql {
  if (options.from === undefined) return sql``
  const bound = sql`${raw(alias)}.created_at >= ${options.from}::timestamptz`
  return alias === 'e' ? sql`${bound} AND ` : sql` AND ${bound}`
}

/**
 * The mark, alone (markPublished) or carried by the next claim: one text for both. The ids are
 * joined as a set (a hash semi-join), not tested as `id = ANY($ids)`: on the generic plan a
 * prepared statement settles on, ANY of a bound array is a filter that walks the array for every
 * row, 1000 x 1000 comparisons a batch (PostgreSQL hashes only a constant array); measured in
 * bench/results/peers-rowlease.md.
 */
function markStatement(names: TableNames, ids: string[], createdAt?: CreatedSpan): Sql {
  return sql`UPDATE ${raw(table(names, 'outbox'))} SET published_at = ${raw(NOW)}, lease_owner = NULL, lease_until = NULL, failed_at = NULL
WHERE id IN (SELECT unnest(${ids}::uuid[])) AND published_at IS NULL${createdAt ? sql` AND created_at BETWEEN ${createdAt.from}::timestamptz AND ${createdAt.to}::timestamptz` : sql``}`
}

export const relay: RelayPart = {
  claim: (names, options) => ({kind: 'update-returning', statement: claimStatement(names, options), ordered: true}),
  claimScript: (names, options) => `${inline(claimStatement(names, options), literal)};`,
  markPublished: markStatement,
  // the ids go as one uuid[] value: one text for every batch
  prepareMark: true,
  retry: (names, r: RetryInput) =>
    sql`UPDATE ${raw(table(names, 'outbox'))}
SET lease_owner = NULL, lease_until = ${raw(NOW)} + ${msInterval(r.delayMs)}, last_error = ${r.error},
  ${r.refund ? raw('attempts = greatest(attempts - 1, 0), failed_at = NULL') : sql`failed_at = CASE WHEN attempts >= ${r.maxAttempts}::integer THEN ${raw(NOW)} ELSE NULL END`}
WHERE id = ${r.id}::uuid AND lease_owner = ${r.owner} AND published_at IS NULL`,
  release: (names, ids, owner) =>
    sql`UPDATE ${raw(table(names, 'outbox'))} SET lease_owner = NULL, lease_until = NULL, attempts = greatest(attempts - 1, 0)
WHERE id = ANY(${ids}::uuid[]) AND lease_owner = ${owner} AND published_at IS NULL`,
  notify: (channel) => sql`SELECT pg_notify(${channel}, '')`,
  listen: (channel) => sql`LISTEN ${raw(quoteIdent(channel))}`,
  claimMark,
}
