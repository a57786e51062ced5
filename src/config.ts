// Settings from options (the CLI's flags), then environment, then an optional outbox.config.json:
// URL, tables. Errors name the options `url` and `config`; the CLI spells them as its flags.
import {existsSync, readFileSync} from 'node:fs'
import {resolve} from 'node:path'
import type {Dialect, TableNames} from '../dialects/index.js'
import {loadDialect} from '../dialects/load.js'
import {dialectNameForUrl, dialectNameOf, DIALECT_NAMES} from '../dialects/names.js'
import {UsageError} from './core/errors.js'
import {resolveTables, type TableFlags} from './schema/tables.js'
import {redactUrl} from './core/redact.js'

export {redactSecrets, redactUrl} from './core/redact.js'

export interface ConfigFile extends TableFlags {
  url?: string
}

/** `path` (the CLI's --config), else OUTBOX_CONFIG, else ./outbox.config.json when it exists. */
export function loadConfigFile(path?: string, env = process.env): ConfigFile {
  const file = path ?? env.OUTBOX_CONFIG ?? (existsSync('outbox.config.json') ? 'outbox.config.json' : undefined)
  if (!file) return {}
  let text: string
  try {
    text = readFileSync(resolve(file), 'utf8')
  } catch {
    throw new UsageError(`cannot read config file ${file}`, (o) => `Check the path given by ${o('config')} or OUTBOX_CONFIG`)
  }
  try {
    const parsed = JSON.parse(text) as unknown
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object')
    return parsed as ConfigFile
  } catch {
    throw new UsageError(`config file ${file} is not a JSON object`, 'Fix its syntax, e.g. {"url": "postgres://...", "table": "outbox_events"}')
  }
}

/** `url` (the CLI's --url), else OUTBOX_DATABASE_URL, else DATABASE_URL, else the config file's url. */
export function resolveUrl(given: string | undefined, env = process.env, file: ConfigFile = {}): string {
  const url = given ?? env.OUTBOX_DATABASE_URL ?? env.DATABASE_URL ?? file.url
  if (url === undefined || url.trim() === '') {
    throw new UsageError('no database URL', (o) => `Pass ${o('url')} or set OUTBOX_DATABASE_URL (postgres://, mysql://, mariadb:// or sqlite:PATH)`)
  }
  return url.trim()
}

/** The URL's dialect, loaded; a UsageError for a scheme we do not speak. */
export async function dialectOfUrl(url: string): Promise<Dialect> {
  const name = dialectNameForUrl(url)
  if (!name) {
    throw new UsageError(
      `unsupported database URL ${JSON.stringify(redactUrl(url))}`,
      'Use postgres://, postgresql://, mysql://, mariadb:// or sqlite:PATH',
    )
  }
  return loadDialect(name)
}

/** A dialect by name or alias (`pg`, `mariadb`, ...), loaded; a UsageError for any other name. */
export async function dialectOfName(name: string): Promise<Dialect> {
  const known = dialectNameOf(name)
  if (!known) throw new UsageError(`unknown dialect ${JSON.stringify(name)}`, `Use one of: ${DIALECT_NAMES.join(', ')}`)
  return loadDialect(known)
}

export interface ConnectionSettings {
  url: string
  dialect: Dialect
  tables: TableNames
}

/** Everything a connecting command needs, validated before any driver is loaded. */
export async function resolveConnection(options: TableFlags & {url?: string; config?: string}, env = process.env): Promise<ConnectionSettings> {
  const file = loadConfigFile(options.config, env)
  const url = resolveUrl(options.url, env, file)
  const dialect = await dialectOfUrl(url)
  const tables = resolveTables(
    {
      schema: options.schema ?? file.schema,
      table: options.table ?? file.table,
      inboxTable: options.inboxTable ?? file.inboxTable,
      archiveTable: options.archiveTable ?? file.archiveTable,
    },
    dialect,
  )
  return {url, dialect, tables}
}

