// Connection URL pieces the drivers need.
import {existsSync} from 'node:fs'
import {UsageError} from '../core/errors.js'
import {redactUrl} from '../core/redact.js'

/** `sqlite:PATH`, `sqlite://PATH`, `sqlite:///abs/path`, `sqlite::memory:` to a better-sqlite3 filename. */
export function sqlitePath(url: string): string {
  let rest = url.replace(/^sqlite3?:/i, '')
  if (rest.startsWith('//')) rest = rest.slice(2)
  rest = rest.split('?')[0]
  if (rest === '' ) throw new UsageError('sqlite URL has no path', 'Use sqlite:./outbox.db or sqlite::memory:')
  return rest === ':memory:' ? ':memory:' : decodeURIComponent(rest)
}

/** mysql2 and pg parse URLs themselves; check the shape first so the error names the URL. */
export function checkNetworkUrl(url: string): URL {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new UsageError(`malformed database URL ${JSON.stringify(redactUrl(url))}`, 'Use e.g. postgres://user@host:5432/dbname')
  }
  if (!parsed.hostname) throw new UsageError(`database URL ${JSON.stringify(redactUrl(url))} has no host`, 'Use e.g. postgres://user@127.0.0.1:5432/dbname')
  if (parsed.port && (Number(parsed.port) < 1 || Number(parsed.port) > 65535)) {
    throw new UsageError(`database URL port ${parsed.port} is out of range`, 'Use a port from 1 to 65535')
  }
  return parsed
}

/** A SQLite URL's file must be there already: a mistyped path is an error, not a new empty database. */
export function requireSqliteFile(url: string): void {
  const path = sqlitePath(url)
  if (path !== ':memory:' && !existsSync(path)) {
    throw new UsageError(`no SQLite database at ${path}`, (o) => `Check the path in ${o('url')}, or create it with: outbox init --url URL --apply`)
  }
}
