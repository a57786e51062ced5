// mysql: SKIP LOCKED only on SELECT, no UPDATE ... RETURNING, no same-table subquery in
// UPDATE. So the claim is two statements in one READ COMMITTED transaction: lock the ids with
// SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE by id.
import {CLAIMED_COLUMNS} from '../../src/schema/columns.js'
import {batchLimit, claimablePredicate, idList, indexNames, orderingPredicate, selectList} from '../shared.js'
import type {ClaimOptions, CreatedSpan, RelayPart, RetryInput, TableNames} from '../dialect.js'
import {inline, raw, sql, type Sql} from '../sql.js'
import {claimMark} from './claim-mark.js'
import {NOW, addMs, literal, quoteIdent, table} from './render.js'

// JSON comes back as text; the locking read runs before the UPDATE, so attempts counts this claim here
const SELECTED = selectList(CLAIMED_COLUMNS, 'e', {payload: 'CAST(e.payload AS CHAR)', headers: 'CAST(e.headers AS CHAR)', attempts: 'e.attempts + 1'})

export const READ_COMMITTED = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'

// FORCE INDEX: on a small table (a new deployment, verify's scratch table after a purge) MariaDB
// may read the pending rows by a table scan and sort them, which locks every pending row, not
// the batch, and a second relay gets nothing (verify's second-session check caught it about one
// run in five). Through the claim index the ORDER BY needs no sort and the LIMIT ends the scan.
function lockStatement(names: TableNames, options: ClaimOptions, columns: string): Sql {
  const outbox = table(names, 'outbox')
  return sql`SELECT ${raw(columns)} FROM ${raw(outbox)} e FORCE INDEX (${raw(quoteIdent(indexNames(names).claim))})
WHERE ${fromMark(options)}${claimablePredicate(NOW, 'e')}${orderingPredicate(outbox, options, 'e')}
ORDER BY e.created_at, e.id
LIMIT ${batchLimit(options)}
FOR UPDATE SKIP LOCKED`
}

/**
 * The low-water mark (claim-mark.ts): the claim index is (published_at, failed_at, created_at,
 * id), so the locking read seeks to the mark, past the delete-marked entries a held read view
 * keeps before it. Not on the ordering check: a replayed event below the mark still holds its
 * aggregate's newer ones back.
 */
function fromMark(options: ClaimOptions): Sql {
  return options.from === undefined ? sql`` : sql`e.created_at >= CAST(${options.from} AS DATETIME(6)) AND `
}

/**
 * UPDATE of rows found by id. FORCE INDEX (PRIMARY): by their ids alone, never by a created_at
 * range scan, which would visit (and wait on) rows past the batch that another claim's locking
 * read holds (test/dialects/claim-concurrency.test.ts's second session). The created_at span
 * only prunes partitions: without it a partitioned outbox probes every partition's key per id
 * (the claim's UPDATE 60-120 ms against 7 ms a batch of 100 on 40 daily partitions).
 */
function updateByIds(names: TableNames, ids: string[], createdAt: CreatedSpan | undefined, set: Sql, where: Sql = sql``): Sql {
  return updateIn(names, idList(ids), createdAt, set, where)
}

/** updateByIds with the ids and the span as SQL (claimScript: the temporary table and its bounds) */
function updateIn(names: TableNames, ids: Sql, createdAt: {from: unknown; to: unknown} | undefined, set: Sql, where: Sql = sql``): Sql {
  const span = createdAt ? sql` AND created_at BETWEEN ${createdAt.from} AND ${createdAt.to}` : sql``
  return sql`UPDATE ${raw(table(names, 'outbox'))} FORCE INDEX (PRIMARY) ${set}
WHERE id IN (${ids})${span}${where}`
}

function leaseSet(options: ClaimOptions): Sql {
  return sql`SET lease_owner = ${options.owner}, lease_until = ${addMs(options.leaseMs)}, attempts = attempts + 1`
}

/**
 * The same two statements as a client script: the locked ids and their created_at go through a
 * temporary table (CREATE TEMPORARY TABLE does not end the transaction), the UPDATE is the
 * relay's (updateIn) with the batch's created_at span in session variables, so it runs
 * unchanged in `mariadb` or `mysql` and skips, rather than waits on, rows another session holds.
 */
function claimScript(names: TableNames, options: ClaimOptions): string {
  const lock = inline(lockStatement(names, options, 'e.id, e.created_at'), literal)
  const span = {from: raw('@outbox_claim_from'), to: raw('@outbox_claim_to')}
  const update = inline(updateIn(names, sql`SELECT id FROM outbox_claim_ids`, span, leaseSet(options)), literal)
  const mark = options.mark ? `${inline(markStatement(names, options.mark.ids, options.mark.createdAt), literal)};\n` : ''
  return `${READ_COMMITTED};
CREATE TEMPORARY TABLE IF NOT EXISTS outbox_claim_ids (id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin PRIMARY KEY, created_at DATETIME(6) NOT NULL);
DELETE FROM outbox_claim_ids;
START TRANSACTION;
${mark}INSERT INTO outbox_claim_ids (id, created_at)
${lock};
SET @outbox_claim_from = (SELECT MIN(created_at) FROM outbox_claim_ids), @outbox_claim_to = (SELECT MAX(created_at) FROM outbox_claim_ids);
${update};
COMMIT;
SELECT ${selectList(CLAIMED_COLUMNS, 'e')}
FROM ${table(names, 'outbox')} e JOIN outbox_claim_ids c ON c.id = e.id ORDER BY e.created_at, e.id;`
}

// The mark, alone or first in the next claim's transaction (the carried mark), where the
// locking read after it sees those rows published. By id through the PRIMARY key (updateByIds).
function markStatement(names: TableNames, ids: string[], createdAt?: CreatedSpan): Sql {
  return updateByIds(names, ids, createdAt, sql`SET published_at = ${raw(NOW)}, lease_owner = NULL, lease_until = NULL, failed_at = NULL`, sql` AND published_at IS NULL`)
}

export const relay: RelayPart = {
  claim: (names, options) => ({
    kind: 'lock-then-update',
    session: [sql`${raw(READ_COMMITTED)}`],
    lock: lockStatement(names, options, SELECTED),
    update: (ids, createdAt) => updateByIds(names, ids, createdAt, leaseSet(options)),
    mark: options.mark && markStatement(names, options.mark.ids, options.mark.createdAt),
  }),
  claimScript,
  claimMark,
  markPublished: markStatement,
  // a placeholder per id: a prepared statement per batch size would pile up on the connection
  prepareMark: false,
  retry: (names, r: RetryInput) =>
    sql`UPDATE ${raw(table(names, 'outbox'))}
SET lease_owner = NULL, lease_until = ${addMs(r.delayMs)}, last_error = ${r.error},
  ${r.refund ? raw('attempts = GREATEST(attempts - 1, 0), failed_at = NULL') : sql`failed_at = CASE WHEN attempts >= ${r.maxAttempts} THEN ${raw(NOW)} ELSE NULL END`}
WHERE id = ${r.id} AND lease_owner = ${r.owner} AND published_at IS NULL`,
  release: (names, ids, owner) =>
    sql`UPDATE ${raw(table(names, 'outbox'))} SET lease_owner = NULL, lease_until = NULL, attempts = GREATEST(attempts - 1, 0)
WHERE id IN (${idList(ids)}) AND lease_owner = ${owner} AND published_at IS NULL`,
}
