// sqlite: quoting, literals and the database clock, shared by every part of the dialect.
import {commonLiteral, doubleQuoted, fragmentRendering, quoteString, tableReference} from '../shared.js'
import type {RenderPart} from '../dialect.js'
import {raw, sql, type Sql} from '../sql.js'
export const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

export const quoteIdent = doubleQuoted

export const table = tableReference(quoteIdent)

export function literal(value: unknown): string {
  const common = commonLiteral(value)
  if (common !== undefined) return common === 'TRUE' ? '1' : common === 'FALSE' ? '0' : common
  if (typeof value === 'string') return quoteString(value)
  if (value instanceof Date) return quoteString(value.toISOString())
  throw new TypeError(`cannot inline a ${typeof value}`)
}

export function addMs(ms: number): Sql {
  return sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ${`+${(ms / 1000).toFixed(3)} seconds`})`
}

export const render: RenderPart = {
  maxIdentifierLength: 128,
  schemas: false,
  quoteIdent,
  table,
  ...fragmentRendering(() => '?', literal),
  now: NOW,
  timeParam: (date) => date.toISOString(),
  parseTime: (value) => (value == null ? null : new Date(String(value))),
}
