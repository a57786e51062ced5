// Dialect lookup by name and by connection URL scheme.
import type {Dialect, DialectName} from './dialect.js'
import {mysql} from './mysql/index.js'
import {dialectNameForUrl, dialectNameOf} from './names.js'
import {postgres} from './postgres/index.js'
import {sqlite} from './sqlite/index.js'

export type * from './dialect.js'
export {ERROR_KINDS} from './errors.js'
export {compile, inline, join, raw, sql, Raw, Sql, type Compiled} from './sql.js'
export {isCommit} from './wire.js'
export {parseRetiredComment} from './retention.js'

export const DIALECTS: Record<DialectName, Dialect> = {postgres, mysql, sqlite}
export {DIALECT_NAMES} from './names.js'
export {loadDialect} from './load.js'

export function dialectByName(name: string): Dialect | undefined {
  const key = dialectNameOf(name)
  return key ? DIALECTS[key] : undefined
}

/** `postgres://`, `postgresql://`, `mysql://`, `mariadb://`, `sqlite:PATH`. */
export function dialectForUrl(url: string): Dialect | undefined {
  const key = dialectNameForUrl(url)
  return key ? DIALECTS[key] : undefined
}
