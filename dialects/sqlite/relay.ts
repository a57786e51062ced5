// sqlite: one writer at a time and no row locks, so the claim is a single
// UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING, which is atomic on its own.
import {CLAIMED_COLUMNS} from '../../src/schema/columns.js'
import {batchLimit, claimablePredicate, orderingPredicate, selectList} from '../shared.js'
import type {ClaimOptions, RelayPart, RetryInput, TableNames} from '../dialect.js'
import {inline, raw, sql, type Sql} from '../sql.js'
import {NOW, addMs, literal, table} from './render.js'

const RETURNED = selectList(CLAIMED_COLUMNS, '')

function claimStatement(names: TableNames, options: ClaimOptions): Sql {
  const outbox = table(names, 'outbox')
  return sql`UPDATE ${raw(outbox)}
SET lease_owner = ${options.owner}, lease_until = ${addMs(options.leaseMs)}, attempts = attempts + 1
WHERE id IN (
  SELECT e.id FROM ${raw(outbox)} e
  WHERE ${claimablePredicate(NOW, 'e')}${orderingPredicate(outbox, options, 'e')}
  ORDER BY e.created_at, e.id
  LIMIT ${batchLimit(options)}
)
RETURNING ${raw(RETURNED)}`
}

/** One bound JSON array instead of n placeholders: the statement text (and cache entry) stays the same. */
function idsJson(ids: readonly string[]): string {
  return JSON.stringify(ids)
}

/** The mark, alone or first in the next claim's transaction (the carried mark: one commit for both). */
function markStatement(names: TableNames, ids: string[]): Sql {
  return sql`UPDATE ${raw(table(names, 'outbox'))} SET published_at = ${raw(NOW)}, lease_owner = NULL, lease_until = NULL, failed_at = NULL
WHERE id IN (SELECT value FROM json_each(${idsJson(ids)})) AND published_at IS NULL`
}

/** The claim as the sqlite3 shell runs it; with a carried mark, both in one transaction. */
function claimScript(names: TableNames, options: ClaimOptions): string {
  const claim = `${inline(claimStatement(names, options), literal)};`
  if (!options.mark) return claim
  return `BEGIN IMMEDIATE;\n${inline(markStatement(names, options.mark.ids), literal)};\n${claim}\nCOMMIT;`
}

export const relay: RelayPart = {
  // RETURNING order is arbitrary in SQLite; the relay sorts on the client.
  claim: (names, options) => ({kind: 'update-returning', statement: claimStatement(names, options), ordered: false, mark: options.mark && markStatement(names, options.mark.ids)}),
  claimScript,
  markPublished: (names, ids) => markStatement(names, ids),
  // the ids go as one JSON value: one text for every batch
  prepareMark: true,
  retry: (names, r: RetryInput) =>
    sql`UPDATE ${raw(table(names, 'outbox'))}
SET lease_owner = NULL, lease_until = ${addMs(r.delayMs)}, last_error = ${r.error},
  ${r.refund ? raw('attempts = max(attempts - 1, 0), failed_at = NULL') : sql`failed_at = CASE WHEN attempts >= ${r.maxAttempts} THEN ${raw(NOW)} ELSE NULL END`}
WHERE id = ${r.id} AND lease_owner = ${r.owner} AND published_at IS NULL`,
  release: (names, ids, owner) =>
    sql`UPDATE ${raw(table(names, 'outbox'))} SET lease_owner = NULL, lease_until = NULL, attempts = max(attempts - 1, 0)
WHERE id IN (SELECT value FROM json_each(${idsJson(ids)})) AND lease_owner = ${owner} AND published_at IS NULL`,
}
