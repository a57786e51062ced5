// postgres: the lease held by the claim's transaction (relay option leaseBy 'transaction'). The
// claim only locks its rows (FOR UPDATE SKIP LOCKED) and writes nothing; the mark, in the same
// transaction, is the one new row version per event (the row lease writes two: the lease at
// claim, then the mark). The transaction's idle timeout is the lease: a relay stuck between its
// statements is cut off by the server, its locks freed, its events claimed again elsewhere.
import {CLAIMED_COLUMNS} from '../../src/schema/columns.js'
import {batchLimit, claimablePredicate, orderingPredicate, selectList} from '../shared.js'
import type {ClaimOptions, CreatedSpan, RetryInput, TableNames, TransactionLeasePart} from '../dialect.js'
import {raw, sql, type Sql} from '../sql.js'
import {NOW, msInterval, table} from './render.js'

// now() is the transaction's start, the claim's time: the mark and a retry's backoff are dated
// when their script arrives instead (statement_timestamp(), the same for a script's statements)
const AT = 'statement_timestamp()'

// attempts counts this claim, as the row lease's claim does by writing it
const RETURNED = selectList(CLAIMED_COLUMNS, 'e', {payload: 'e.payload::text', headers: 'e.headers::text', attempts: 'e.attempts + 1'})

/** PostgreSQL's GUC is an int of milliseconds */
const MAX_TIMEOUT_MS = 2_147_483_647

function claim(names: TableNames, options: ClaimOptions): Sql {
  const outbox = table(names, 'outbox')
  // Rows with a live row lease (another relay's, or a retry's backoff) are skipped by
  // claimablePredicate; rows another transaction locks, by SKIP LOCKED. Sorted by the database.
  return sql`SELECT ${raw(RETURNED)} FROM ${raw(outbox)} e
WHERE ${options.from === undefined ? sql`` : sql`e.created_at >= ${options.from}::timestamptz AND `}${claimablePredicate(NOW, 'e')}${orderingPredicate(outbox, options, 'e')}
ORDER BY e.created_at, e.id
LIMIT ${batchLimit(options)}
FOR UPDATE SKIP LOCKED`
}

function mark(names: TableNames, ids: string[], createdAt?: CreatedSpan): Sql {
  return sql`UPDATE ${raw(table(names, 'outbox'))} SET published_at = ${raw(AT)}, lease_owner = NULL, lease_until = NULL, failed_at = NULL
WHERE id = ANY(${ids}::uuid[]) AND published_at IS NULL${createdAt ? sql` AND created_at BETWEEN ${createdAt.from}::timestamptz AND ${createdAt.to}::timestamptz` : sql``}`
}

function retry(names: TableNames, r: RetryInput): Sql {
  return sql`UPDATE ${raw(table(names, 'outbox'))}
SET lease_owner = NULL, lease_until = ${raw(AT)} + ${msInterval(r.delayMs)}, last_error = ${r.error.replaceAll('\0', '')},
  ${r.refund ? raw('failed_at = NULL') : sql`attempts = attempts + 1, failed_at = CASE WHEN attempts + 1 >= ${r.maxAttempts}::integer THEN ${raw(AT)} ELSE NULL END`}
WHERE id = ${r.id}::uuid AND published_at IS NULL`
}

export const transactionLease: TransactionLeasePart = {
  begin: (leaseMs) => [sql`BEGIN`, sql`SET LOCAL idle_in_transaction_session_timeout = ${raw(String(Math.min(Math.max(1, Math.round(leaseMs)), MAX_TIMEOUT_MS)))}`],
  claim,
  mark,
  retry,
  commit: sql`COMMIT`,
  rollback: sql`ROLLBACK`,
}
