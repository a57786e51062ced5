// Dialect lookup by name and by connection URL scheme.
import type {Dialect, DialectName} from './dialect.js'
import {mysql} from './mysql/index.js'
import {postgres} from './postgres/index.js'
import {sqlite} from './sqlite/index.js'

export type * from './dialect.js'
export {ERROR_KINDS} from './errors.js'
export {compile, inline, join, raw, sql, Raw, Sql, type Compiled} from './sql.js'

export const DIALECTS: Record<DialectName, Dialect> = {postgres, mysql, sqlite}
export const DIALECT_NAMES = Object.keys(DIALECTS) as DialectName[]

const ALIASES: Record<string, DialectName> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  pg: 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
  sqlite: 'sqlite',
  sqlite3: 'sqlite',
}

export function dialectByName(name: string): Dialect | undefined {
  const key = ALIASES[name.toLowerCase()]
  return key ? DIALECTS[key] : undefined
}

/** `postgres://`, `postgresql://`, `mysql://`, `mariadb://`, `sqlite:PATH`. */
export function dialectForUrl(url: string): Dialect | undefined {
  const match = /^([a-z][a-z0-9+.-]*):/i.exec(url)
  if (!match) return undefined
  const scheme = match[1].toLowerCase()
  if (scheme === 'pg') return undefined
  return dialectByName(scheme)
}
