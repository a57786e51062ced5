// Driver errors to one actionable line, with no password in it. Each dialect tells what its
// driver's errors mean (Dialect.errors.classify); the words the user reads are all here.
import {DIALECTS, dialectForUrl, ERROR_KINDS, type DbErrorKind, type Dialect} from '../../dialects/index.js'
import {redactSecrets, redactUrl} from '../core/redact.js'
import {ConnectionError, OutboxError} from '../core/errors.js'

interface DriverError {
  code?: string | number
  message?: string
  sqlMessage?: string
}

// Node's own network errors, whichever driver passes them on
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'])
const LOST = new Set(['ECONNRESET', 'EPIPE'])

/**
 * What a database error means, and which dialect said so: by the given dialect, or, where it is
 * not known, by whichever dialect knows the error (the earliest kind in ERROR_KINDS order wins,
 * as it does within one dialect).
 */
export function classifyDbError(error: unknown, dialect?: Dialect): {kind: DbErrorKind; dialect: Dialect} | undefined {
  let found: {kind: DbErrorKind; dialect: Dialect} | undefined
  for (const candidate of dialect ? [dialect] : Object.values(DIALECTS)) {
    const kind = candidate.errors.classify(error)
    if (kind && (!found || ERROR_KINDS.indexOf(kind) < ERROR_KINDS.indexOf(found.kind))) found = {kind, dialect: candidate}
  }
  return found
}

/**
 * The server could not be reached, went away, or had no connection slot left: the same
 * statement may well succeed on a new connection once it is back (the relay retries soon).
 * The error's cause is looked at too, for a driver error wrapped on its way up.
 */
export function isConnectionTrouble(error: unknown, dialect?: Dialect): boolean {
  for (let e = error, depth = 0; e && depth < 3; e = (e as {cause?: unknown}).cause, depth++) {
    const code = String((e as DriverError).code ?? '')
    if (UNREACHABLE.has(code) || LOST.has(code)) return true
    const kind = classifyDbError(e, dialect)?.kind
    if (kind === 'lost' || kind === 'too-many-connections') return true
  }
  return false
}

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

/** The query named a table that does not exist (whichever dialect's error it is). */
export function isMissingTable(error: unknown): boolean {
  return Object.values(DIALECTS).some((dialect) => dialect.errors.classify(error) === 'missing-table')
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
    return new ConnectionError(`cannot reach the database at ${where} (${code || message})`, (o) => `Check the host and port in ${o('url')} and that the server is running`)
  }
  const known = LOST.has(code) ? {kind: 'lost' as const} : classifyDbError(error, dialectForUrl(url))
  switch (known?.kind) {
    case 'lost':
      return new ConnectionError(
        `lost the connection to the database at ${where} (${code || message}); a transaction in flight was rolled back`,
        'Check the server, then rerun: work already committed is kept',
      )
    case 'too-many-connections':
      return new ConnectionError(
        `the database refused a new connection: no connection slot left (${message})`,
        'Close idle sessions or raise the limit (max_connections, the role\'s CONNECTION LIMIT, MAX_USER_CONNECTIONS)',
      )
    case 'statement-timeout':
      return new ConnectionError(
        `a statement ran longer than the statement timeout (${message})`,
        (o) => `Make it cheaper (a smaller ${o('batch')}, an index) or raise the timeout (statementTimeoutMs, or the login's statement_timeout / max_statement_time on the server)`,
      )
    case 'cancelled':
      return new ConnectionError(
        `a statement was cancelled by another session (${message}); its transaction was rolled back`,
        'Rerun once whoever cancelled it (pg_cancel_backend, KILL QUERY) agrees: work already committed is kept',
      )
    case 'login':
      return new ConnectionError(`the database refused the login for ${where}`, (o) => `Check the user and password in ${o('url')}`)
    case 'no-database':
      return new ConnectionError((o) => `no database named in ${o('url')} ${where}`, 'Add one to the URL: mysql://user@host:3306/dbname')
    case 'unknown-database':
      return new ConnectionError(`database does not exist (${message})`, (o) => `Create it or fix the database name in ${o('url')}`)
    case 'missing-table':
      return missingTable(message, known.dialect.errors.missingTable(error), context)
    case 'missing-column':
      return new ConnectionError(`the table does not have the outbox columns (${message})`, (o) => `Point ${o('table')} at a table created by outbox init`)
    case 'cannot-open':
      return new ConnectionError(`cannot open the ${known.dialect.displayName} database ${where}`, 'Check that the directory exists and is writable')
    case 'not-a-database':
      return new ConnectionError(`${where} is not a ${known.dialect.displayName} database`, (o) => `Point ${o('url')} at a ${known.dialect.displayName} file`)
  }
  return new ConnectionError(`database error: ${message}`, `On ${where}`)
}

/** The outbox table, or the archive table where the error names that one, does not exist. */
function missingTable(message: string, named: string | undefined, context?: {table?: string; archive?: string}): ConnectionError {
  const unqualified = (name: string) => name.split('.').pop()
  if (context?.archive && named && unqualified(named) === unqualified(context.archive) && unqualified(named) !== unqualified(context.table ?? '')) {
    return new ConnectionError(`the archive table ${context.archive} does not exist (${message})`, (o) => `Create it with: outbox init --url URL --apply, or pass ${o('archiveTable')}`)
  }
  const table = context?.table ? ` ${context.table}` : ''
  return new ConnectionError(`the outbox table${table} does not exist (${message})`, 'Create it with: outbox init --url URL --apply')
}
