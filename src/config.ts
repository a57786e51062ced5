// Settings from flags, then environment, then an optional outbox.config.json: URL, tables.
import {existsSync, readFileSync} from 'node:fs'
import {resolve} from 'node:path'
import type {Dialect, TableNames} from '../dialects/index.js'
import {dialectByName, dialectForUrl, DIALECT_NAMES} from '../dialects/index.js'
import {UsageError} from './errors.js'
import {resolveTables, type TableFlags} from './schema.js'

export interface ConfigFile extends TableFlags {
  url?: string
}

/** `--config FILE`, else OUTBOX_CONFIG, else ./outbox.config.json when it exists. */
export function loadConfigFile(path?: string, env = process.env): ConfigFile {
  const file = path ?? env.OUTBOX_CONFIG ?? (existsSync('outbox.config.json') ? 'outbox.config.json' : undefined)
  if (!file) return {}
  let text: string
  try {
    text = readFileSync(resolve(file), 'utf8')
  } catch {
    throw new UsageError(`cannot read config file ${file}`, 'Check the path given by --config or OUTBOX_CONFIG')
  }
  try {
    const parsed = JSON.parse(text) as unknown
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object')
    return parsed as ConfigFile
  } catch {
    throw new UsageError(`config file ${file} is not a JSON object`, 'Fix its syntax, e.g. {"url": "postgres://...", "table": "outbox_events"}')
  }
}

/** `--url`, else OUTBOX_DATABASE_URL, else DATABASE_URL, else the config file's url. */
export function resolveUrl(flag: string | undefined, env = process.env, file: ConfigFile = {}): string {
  const url = flag ?? env.OUTBOX_DATABASE_URL ?? env.DATABASE_URL ?? file.url
  if (url === undefined || url.trim() === '') {
    throw new UsageError('no database URL', 'Pass --url or set OUTBOX_DATABASE_URL (postgres://, mysql://, mariadb:// or sqlite:PATH)')
  }
  return url.trim()
}

export function dialectOfUrl(url: string): Dialect {
  const dialect = dialectForUrl(url)
  if (!dialect) {
    throw new UsageError(
      `unsupported database URL ${JSON.stringify(redactUrl(url))}`,
      'Use postgres://, postgresql://, mysql://, mariadb:// or sqlite:PATH',
    )
  }
  return dialect
}

export function dialectOfName(name: string): Dialect {
  const dialect = dialectByName(name)
  if (!dialect) throw new UsageError(`unknown dialect ${JSON.stringify(name)}`, `Use one of: ${DIALECT_NAMES.join(', ')}`)
  return dialect
}

export interface ConnectionSettings {
  url: string
  dialect: Dialect
  tables: TableNames
}

/** Everything a connecting command needs, validated before any driver is loaded. */
export function resolveConnection(flags: TableFlags & {url?: string; config?: string}, env = process.env): ConnectionSettings {
  const file = loadConfigFile(flags.config, env)
  const url = resolveUrl(flags.url, env, file)
  const dialect = dialectOfUrl(url)
  const tables = resolveTables(
    {
      schema: flags.schema ?? file.schema,
      table: flags.table ?? file.table,
      inboxTable: flags.inboxTable ?? file.inboxTable,
      archiveTable: flags.archiveTable ?? file.archiveTable,
    },
    dialect,
  )
  return {url, dialect, tables}
}

/** The URL with its password replaced by ***; safe for any output. */
// The password runs from the first ':' of the userinfo to the last '@' (an unencoded '@', '?',
// '#' or '/' in it must not cut it short); a password=... query parameter counts too.
const USERINFO_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^:/@?#]*):.*@/i
const USERINFO_PASSWORD_IN_TEXT = /([a-z][a-z0-9+.-]*:\/\/[^:/@\s?#]*):\S*@/gi
const QUERY_PASSWORD = /([?&](?:password|pass|pwd)=)[^&#\s]*/gi

export function redactUrl(url: string): string {
  return url.replace(USERINFO_PASSWORD, '$1:***@').replace(QUERY_PASSWORD, '$1***')
}

/** Removes the URL's password (raw and percent-decoded) from any text, e.g. a driver error. */
export function redactSecrets(text: string, url?: string): string {
  let out = text.replace(USERINFO_PASSWORD_IN_TEXT, '$1:***@').replace(QUERY_PASSWORD, '$1***')
  for (const password of url ? passwordsOf(url) : []) {
    for (const secret of new Set([password, safeDecode(password)])) if (secret.length >= 3) out = out.split(secret).join('***')
  }
  return out
}

function passwordsOf(url: string): string[] {
  const inUserinfo = /^[a-z][a-z0-9+.-]*:\/\/[^:/@?#]*:(.*)@/i.exec(url)?.[1]
  const inQuery = [...url.matchAll(/[?&](?:password|pass|pwd)=([^&#]*)/gi)].map((m) => m[1])
  return [inUserinfo, ...inQuery].filter((p): p is string => Boolean(p))
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
