// mysql: quoting, literals and the database clock, shared by every part of the dialect.
import {commonLiteral, fragmentRendering, quoteString, tableReference} from '../shared.js'
import type {RenderPart} from '../dialect.js'
import {raw, sql, type Sql} from '../sql.js'
// DATETIME(6) holding UTC: UTC_TIMESTAMP does not depend on the session time zone.
export const NOW = 'UTC_TIMESTAMP(6)'

export const exactTime = (column: string) => `DATE_FORMAT(${column}, '%Y-%m-%d %H:%i:%s.%f')`

export function quoteIdent(name: string): string {
  return `\`${name.replaceAll('`', '``')}\``
}

export const table = tableReference(quoteIdent)

/** 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC, the text form of a DATETIME(6). */
export function datetime(date: Date): string {
  return date.toISOString().replace('T', ' ').replace('Z', '000')
}

export function literal(value: unknown): string {
  const common = commonLiteral(value)
  if (common !== undefined) return common
  if (typeof value === 'string') {
    // Backslashes and control characters mean different things with and without
    // NO_BACKSLASH_ESCAPES; a hex literal means the same bytes under every sql_mode.
    if (/[\\\u0000-\u001f]/.test(value)) return `_utf8mb4 X'${Buffer.from(value, 'utf8').toString('hex')}'`
    return quoteString(value)
  }
  if (value instanceof Date) return quoteString(datetime(value))
  throw new TypeError(`cannot inline a ${typeof value}`)
}

export function addMs(ms: number): Sql {
  return sql`DATE_ADD(${raw(NOW)}, INTERVAL ${ms * 1000} MICROSECOND)`
}

export const render: RenderPart = {
  maxIdentifierLength: 64,
  // a MySQL schema is a database: the URL names it
  schemas: false,
  quoteIdent,
  table,
  ...fragmentRendering(() => '?', literal),
  now: NOW,
  timeParam: datetime,
  parseTime: (value) => {
    if (value == null) return null
    if (value instanceof Date) return value
    return new Date(`${String(value).replace(' ', 'T')}Z`)
  },
}
