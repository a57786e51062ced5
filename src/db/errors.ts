// Driver errors to one actionable line, with no password in it.
import {redactSecrets, redactUrl} from '../core/redact.js'
import {ConnectionError, OutboxError} from '../core/errors.js'

interface DriverError {
  code?: string | number
  errno?: number
  message?: string
  address?: string
  port?: number
  sqlMessage?: string
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'])
// the server went away or killed the session after it was reached (pg_terminate_backend = 57P01, KILL = 1927)
const LOST = new Set(['ECONNRESET', 'EPIPE', 'PROTOCOL_CONNECTION_LOST', '57P01', '57P02', '57P03', 'ER_CONNECTION_KILLED', 'CR_SERVER_LOST', 'CR_SERVER_GONE_ERROR'])
const LOST_ERRNO = new Set([1927, 2006, 2013])

/**
 * No pooled connection came free within the wait bound (OpenOptions.connectTimeoutMs): every
 * connection stayed checked out that long. Thrown by the drivers, which know the bound and the
 * pool size; no size means SQLite's single connection.
 */
export function poolWaitTimeout(waitMs: number, poolSize?: number): ConnectionError {
  const after = `after ${waitMs / 1000} s`
  const tx = 'inside transaction() query through its tx, not the db'
  if (poolSize === undefined) {
    return new ConnectionError(`no free connection ${after} (the SQLite connection stayed in use)`, `Keep transactions shorter; ${tx}`)
  }
  const inUse = poolSize === 1 ? 'its one connection in use' : `all ${poolSize} in use`
  return new ConnectionError(`no free connection in the pool ${after} (${inUse})`, `Use a larger pool (poolSize) or shorter transactions; ${tx}`)
}

/** The query named a table that does not exist (PostgreSQL 42P01, MySQL 1146, SQLite "no such table"). */
export function isMissingTable(error: unknown): boolean {
  const e = (error ?? {}) as DriverError
  return e.code === '42P01' || e.code === 'ER_NO_SUCH_TABLE' || e.errno === 1146 || /no such table/i.test(String(e.message ?? ''))
}

/** Maps a connect or query failure to an OutboxError; unknown errors keep their (redacted) text. */
/** The table a missing-table error names (PostgreSQL relation "x", MariaDB Table 'db.x', SQLite no such table: x). */
function missingTableName(message: string): string | undefined {
  const m = /relation "([^"]+)"|Table '(?:[^'.]+\.)?([^']+)'|no such table: (\S+)/i.exec(message)
  return m ? (m[1] ?? m[2] ?? m[3]) : undefined
}

/**
 * Maps a connect or query failure to an OutboxError; unknown errors keep their (redacted) text.
 * `context.table` is the outbox table, `context.archive` the archive table a command reads: a
 * missing one is named as what it is.
 */
export function describeDbError(error: unknown, url: string, context?: {table?: string; archive?: string}): OutboxError {
  if (error instanceof OutboxError) return error
  const e = (error ?? {}) as DriverError
  const where = redactUrl(url)
  const message = redactSecrets(String(e.sqlMessage ?? e.message ?? error), url).split('\n')[0]
  const code = String(e.code ?? '')
  if (UNREACHABLE.has(code) || /connect(ion)? (refused|timeout)|timeout expired|getaddrinfo/i.test(message)) {
    return new ConnectionError(`cannot reach the database at ${where} (${code || message})`, 'Check the host and port in --url and that the server is running')
  }
  if (LOST.has(code) || LOST_ERRNO.has(Number(e.errno)) || /connection terminated|server closed the connection|connection lost|terminating connection/i.test(message)) {
    return new ConnectionError(
      `lost the connection to the database at ${where} (${code || message}); a transaction in flight was rolled back`,
      'Check the server, then rerun: work already committed is kept',
    )
  }
  // PostgreSQL 53300; MySQL/MariaDB 1040 (server), 1203 / 1226 (the user's own limit)
  if (code === '53300' || [1040, 1203, 1226].includes(Number(e.errno)) || /too many connections/i.test(message)) {
    return new ConnectionError(
      `the database refused a new connection: no connection slot left (${message})`,
      'Close idle sessions or raise the limit (max_connections, the role\'s CONNECTION LIMIT, MAX_USER_CONNECTIONS)',
    )
  }
  // PostgreSQL 57014 from statement_timeout (not a cancel by hand), MariaDB 1969 max_statement_time, MySQL 3024 max_execution_time
  if ((code === '57014' && /statement timeout/i.test(message)) || [1969, 3024].includes(Number(e.errno))) {
    return new ConnectionError(
      `a statement ran longer than the statement timeout (${message})`,
      'Make it cheaper (a smaller --batch, an index) or raise the timeout (statementTimeoutMs, or the login\'s statement_timeout / max_statement_time on the server)',
    )
  }
  // PostgreSQL 57014 otherwise (pg_cancel_backend, a client cancel); MariaDB/MySQL 1317 (KILL QUERY)
  if (code === '57014' || Number(e.errno) === 1317) {
    return new ConnectionError(
      `a statement was cancelled by another session (${message}); its transaction was rolled back`,
      'Rerun once whoever cancelled it (pg_cancel_backend, KILL QUERY) agrees: work already committed is kept',
    )
  }
  if (code === '28P01' || code === '28000' || code === 'ER_ACCESS_DENIED_ERROR' || e.errno === 1045) {
    return new ConnectionError(`the database refused the login for ${where}`, 'Check the user and password in --url')
  }
  if (code === 'ER_NO_DB_ERROR' || e.errno === 1046) {
    return new ConnectionError(`no database named in --url ${where}`, 'Add one to the URL: mysql://user@host:3306/dbname')
  }
  if (code === '3D000' || code === 'ER_BAD_DB_ERROR' || e.errno === 1049) {
    return new ConnectionError(`database does not exist (${message})`, 'Create it or fix the database name in --url')
  }
  if (isMissingTable(error)) {
    const named = missingTableName(message)
    const unqualified = (name: string) => name.split('.').pop()
    if (context?.archive && named && unqualified(named) === unqualified(context.archive) && unqualified(named) !== unqualified(context.table ?? '')) {
      return new ConnectionError(`the archive table ${context.archive} does not exist (${message})`, 'Create it with: outbox init --url URL --apply, or pass --archive-table')
    }
    const table = context?.table ? ` ${context.table}` : ''
    return new ConnectionError(`the outbox table${table} does not exist (${message})`, 'Create it with: outbox init --url URL --apply')
  }
  if (code === '42703' || code === 'ER_BAD_FIELD_ERROR' || e.errno === 1054 || /no such column|has no column/i.test(message)) {
    return new ConnectionError(`the table does not have the outbox columns (${message})`, 'Point --table at a table created by outbox init')
  }
  if (code === 'SQLITE_CANTOPEN' || /unable to open database|cannot open database/i.test(message)) {
    return new ConnectionError(`cannot open the SQLite database ${where}`, 'Check that the directory exists and is writable')
  }
  if (code === 'SQLITE_NOTADB' || /file is not a database/i.test(message)) {
    return new ConnectionError(`${where} is not a SQLite database`, 'Point --url at a SQLite file')
  }
  return new ConnectionError(`database error: ${message}`, `On ${where}`)
}
