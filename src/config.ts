// Settings from options (the CLI's flags), then OUTBOX_* variables, then an optional
// outbox.config.json, then DATABASE_URL: URL, tables. Errors name the options `url` and `config`; the CLI spells them as its flags.
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
  /** anything else the file holds: the CLI's per-command sections ("relay": {...}) */
  [key: string]: unknown
}

/** The file to read: `path` (the CLI's --config), else OUTBOX_CONFIG, else ./outbox.config.json when it exists. */
export function configFilePath(path?: string, env = process.env, cwd = process.cwd()): string | undefined {
  if (path !== undefined) return path
  if (env.OUTBOX_CONFIG) return env.OUTBOX_CONFIG
  return existsSync(resolve(cwd, 'outbox.config.json')) ? 'outbox.config.json' : undefined
}

/**
 * The config file as an object, `${NAME}` in its strings replaced from the environment (so
 * secrets stay out of the file; `$${` is a literal `${`). {} when there is no file.
 */
export function loadConfigFile(path?: string, env = process.env, cwd = process.cwd()): ConfigFile {
  const file = configFilePath(path, env, cwd)
  if (!file) return {}
  let text: string
  try {
    text = readFileSync(resolve(cwd, file), 'utf8')
  } catch {
    throw new UsageError(`cannot read config file ${file}`, (o) => `Check the path given by ${o('config')} or OUTBOX_CONFIG`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text) as unknown
  } catch (error) {
    throw new UsageError(`config file ${file} is not valid JSON: ${(error as Error).message}`, 'Fix its syntax, e.g. {"url": "postgres://...", "relay": {"publisher": "amqp"}}')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`config file ${file} is not a JSON object`, 'Fix its syntax, e.g. {"url": "postgres://...", "table": "outbox_events"}')
  }
  return interpolate(parsed, '', file, env) as ConfigFile
}

function interpolate(value: unknown, path: string, file: string, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$(\$)?\{([^}]*)\}/g, (whole, escaped: string | undefined, name: string) => {
      if (escaped) return whole.slice(1)
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`${path} in ${file}: \${${name}} is no environment variable name`, 'Write ${NAME} with letters, digits and underscores, or $${ for a literal ${')
      const found = env[name]
      if (found === undefined) throw new UsageError(`${path} in ${file} reads \${${name}}, which is not set`, `Set ${name} in the environment, or write the value into the file`)
      return found
    })
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolate(item, `${path}[${i}]`, file, env))
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, path ? `${path}.${key}` : key, file, env)]))
  }
  return value
}

/**
 * `url` (the CLI's --url), else OUTBOX_DATABASE_URL, else the config file's url, else
 * DATABASE_URL: explicit beats implicit, and DATABASE_URL is the app's, not ours.
 */
export function resolveUrl(given: string | undefined, env = process.env, file: ConfigFile = {}): string {
  const fromFile = typeof file.url === 'string' ? file.url : undefined
  const url = given ?? nonEmpty(env.OUTBOX_DATABASE_URL) ?? fromFile ?? nonEmpty(env.DATABASE_URL)
  if (url === undefined || url.trim() === '') {
    throw new UsageError('no database URL', (o) => `Pass ${o('url')}, set OUTBOX_DATABASE_URL, or put "url" in outbox.config.json (postgres://, mysql://, mariadb:// or sqlite:PATH)`)
  }
  return url.trim()
}

const nonEmpty = (value: string | undefined) => (value === undefined || value === '' ? undefined : value)

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
  const text = (key: keyof TableFlags) => (typeof file[key] === 'string' ? (file[key] as string) : undefined)
  const tables = resolveTables(
    {
      schema: options.schema ?? text('schema'),
      table: options.table ?? text('table'),
      inboxTable: options.inboxTable ?? text('inboxTable'),
      archiveTable: options.archiveTable ?? text('archiveTable'),
    },
    dialect,
  )
  return {url, dialect, tables}
}

