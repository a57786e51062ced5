// ErrorsPart: driver errors the code must tell apart, by their meaning rather than their
// codes. src/db/errors.ts turns a DbErrorKind into the one line the user reads.

/**
 * What a database error means, as far as the user can act on it:
 * - 'lost': the server went away or killed the session after it was reached
 * - 'too-many-connections': no connection slot left (server-wide or the login's own limit)
 * - 'statement-timeout': a statement ran past the server-side statement timeout
 * - 'cancelled': another session cancelled the statement (pg_cancel_backend, KILL QUERY)
 * - 'login': user or password refused
 * - 'no-database': the URL names no database and the server needs one
 * - 'unknown-database': the URL's database does not exist
 * - 'missing-table' / 'missing-column': the statement named a table or column that is not there
 * - 'cannot-open': the database file cannot be opened or created
 * - 'not-a-database': the file is not a database of this kind
 */
export type DbErrorKind =
  | 'lost'
  | 'too-many-connections'
  | 'statement-timeout'
  | 'cancelled'
  | 'login'
  | 'no-database'
  | 'unknown-database'
  | 'missing-table'
  | 'missing-column'
  | 'cannot-open'
  | 'not-a-database'

/** The kinds in the order classify() tries them: an error matching two gets the first. */
export const ERROR_KINDS: readonly DbErrorKind[] = [
  'lost',
  'too-many-connections',
  'statement-timeout',
  'cancelled',
  'login',
  'no-database',
  'unknown-database',
  'missing-table',
  'missing-column',
  'cannot-open',
  'not-a-database',
]

export interface ErrorsPart {
  /**
   * What an error from this database's driver means, trying the kinds in ERROR_KINDS order;
   * undefined for anything else (network errors before the server answered, our own errors,
   * another database's codes).
   */
  classify(error: unknown): DbErrorKind | undefined
  /** the table a 'missing-table' error names, as its message gives it (maybe schema-qualified) */
  missingTable(error: unknown): string | undefined
  /** the error a lock wait that gave up raises (PostgreSQL 55P03, MySQL/MariaDB 1205, SQLITE_BUSY) */
  isLockTimeout(error: unknown): boolean
  /** the database chose this transaction as a deadlock victim (it rolled back; safe to rerun) */
  isDeadlock(error: unknown): boolean
  /** a unique-key violation (PostgreSQL 23505, MySQL ER_DUP_ENTRY 1062, SQLite's primary-key constraint) */
  isDuplicateKey(error: unknown): boolean
}
