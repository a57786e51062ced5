// Running SQL on a better-sqlite3 Database: our own behind Db (connect.ts), or an app's given
// to writeEventSync or Consumer (driver.ts). Prepared statements are kept per database and
// text: preparing costs about as much as running a short statement.
import type BetterSqlite3 from 'better-sqlite3'
import type {DriverResult} from '../driver.js'

const CACHE_LIMIT = 500 // a bound for callers that build texts by the thousand, not a tuned figure
const cache = new WeakMap<object, Map<string, BetterSqlite3.Statement>>()

function prepared(database: BetterSqlite3.Database, text: string): BetterSqlite3.Statement {
  let statements = cache.get(database)
  if (!statements) cache.set(database, (statements = new Map()))
  let statement = statements.get(text)
  if (!statement) {
    statement = database.prepare(text)
    if (statements.size >= CACHE_LIMIT) statements.clear()
    statements.set(text, statement)
  }
  return statement
}

function bind(params: readonly unknown[]): unknown[] {
  // better-sqlite3 binds numbers, strings, bigints, buffers and null; booleans become 0/1.
  return params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p === undefined ? null : p instanceof Date ? p.toISOString() : p))
}

/** One statement, synchronously: its rows (a reader) and the rows it changed (else the rows it returned). */
export function runSync(database: BetterSqlite3.Database, text: string, params: readonly unknown[]): DriverResult {
  const statement = prepared(database, text)
  if (statement.reader) {
    const rows = statement.all(...bind(params)) as DriverResult['rows']
    return {rows, affected: rows.length}
  }
  return {rows: [], affected: statement.run(...bind(params)).changes}
}
