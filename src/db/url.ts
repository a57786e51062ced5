// Connection URL pieces the drivers need. A network URL is split here the way libpq splits one
// (an empty host, a percent-encoded socket path as the host); what its parameters mean is each
// dialect's business (dialects/<d>/url.ts).
import {existsSync, readFileSync} from 'node:fs'
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

/** A SQLite URL's file must be there already: a mistyped path is an error, not a new empty database. */
export function requireSqliteFile(url: string): void {
  const path = sqlitePath(url)
  if (path !== ':memory:' && !existsSync(path)) {
    throw new UsageError(`no SQLite database at ${path}`, (o) => `Check the path in ${o('url')}, or create it with: outbox init --url URL --apply`)
  }
}

/** `scheme://[user[:password]@][host][:port][/database][?name=value&...]`, every piece percent-decoded. */
export interface NetworkUrl {
  user?: string
  password?: string
  /** '' when the URL names none (`postgres:///db`); a path when it is a percent-encoded socket (`%2Fvar%2Frun%2Fpostgresql`) */
  host: string
  port?: number
  database?: string
  /** the query's parameters, the last of a repeated name winning */
  params: Map<string, string>
}

// authority up to the first '/', '?' or '#'; the userinfo ends at its last '@' (an '@' in a password)
const NETWORK_URL = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?(?:#.*)?$/i

export function parseNetworkUrl(url: string): NetworkUrl {
  const scheme = /^[a-z][a-z0-9+.-]*/i.exec(url)?.[0] ?? 'postgres'
  const malformed = () => new UsageError(`malformed database URL ${JSON.stringify(redactUrl(url))}`, `Use e.g. ${scheme}://user@host/dbname (percent-encode / ? # in a password)`)
  const match = NETWORK_URL.exec(url)
  if (!match) throw malformed()
  const [, authority, path = '', query = ''] = match
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text)
    } catch {
      throw malformed()
    }
  }
  const at = authority.lastIndexOf('@')
  const userinfo = at < 0 ? undefined : authority.slice(0, at)
  const hostport = authority.slice(at + 1)
  const colon = userinfo?.indexOf(':') ?? -1
  const user = userinfo === undefined ? undefined : decode(colon < 0 ? userinfo : userinfo.slice(0, colon))
  const password = colon < 0 ? undefined : decode(userinfo!.slice(colon + 1))
  if (hostport.includes(',')) {
    throw new UsageError(`database URL ${JSON.stringify(redactUrl(url))} names several hosts`, 'Give one host: failover lists are not supported')
  }
  // [v6 address]:port, or host:port
  const parts = /^(\[[^\]]*\]|[^:[\]]*)(?::(.*))?$/.exec(hostport)
  if (!parts) throw malformed()
  const host = decode(parts[1].replace(/^\[(.*)\]$/, '$1'))
  const params = new Map<string, string>()
  for (const pair of query.split('&').filter(Boolean)) {
    const eq = pair.indexOf('=')
    params.set(decode(eq < 0 ? pair : pair.slice(0, eq)), decode(eq < 0 ? '' : pair.slice(eq + 1)))
  }
  const database = decode(path.replace(/^\//, '')) || undefined
  return {user: user || undefined, password, host, port: parts[2] === undefined || parts[2] === '' ? undefined : urlPort(parts[2], url), database, params}
}

/** A port from the URL or its `port=` parameter: 1 to 65535. */
export function urlPort(text: string, url: string): number {
  const port = /^\d+$/.test(text) ? Number(text) : NaN
  // the text is not echoed: in postgres://app:pa?ss@host the "port" is the password cut short by
  // its unencoded '?', '#' or '/'
  if (!Number.isInteger(port)) {
    throw new UsageError(`malformed database URL ${JSON.stringify(redactUrl(url))}: the port is not a number`, 'Use a port from 1 to 65535, and percent-encode ?, # and / in a password (%3F, %23, %2F)')
  }
  if (port < 1 || port > 65535) throw new UsageError(`database URL port ${port} is out of range`, 'Use a port from 1 to 65535')
  return port
}

/** A file a URL parameter names (a certificate, a key), read now: a wrong path is one line before connecting. */
export function readUrlFile(param: string, path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error)
    throw new UsageError(`cannot read the ${param} file ${path} (${code})`, (o) => `Fix ${param}= in ${o('url')}`)
  }
}
