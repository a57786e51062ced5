// postgres: quoting, literals and the database clock, shared by every part of the dialect.
import {commonLiteral, doubleQuoted, fragmentRendering, quoteString, tableReference} from '../shared.js'
import type {RenderPart} from '../dialect.js'
import {raw, sql, type Sql} from '../sql.js'
export const NOW = 'now()'

export const quoteIdent = doubleQuoted

export const table = tableReference(quoteIdent)

export function literal(value: unknown): string {
  const common = commonLiteral(value)
  if (common !== undefined) return common
  if (typeof value === 'string') return quoteString(value)
  if (value instanceof Date) return `${quoteString(value.toISOString())}::timestamptz`
  if (Array.isArray(value)) return `ARRAY[${value.map(literal).join(', ')}]`
  throw new TypeError(`cannot inline a ${typeof value}`)
}

export function msInterval(ms: number): Sql {
  return sql`${ms}::double precision * interval '1 millisecond'`
}

/** a timestamptz as fixed-width ISO text in UTC with microseconds: sorts like the value, binds back equal */
export function exactUtc(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
}

export const render: RenderPart = {
  maxIdentifierLength: 63,
  schemas: true,
  quoteIdent,
  table,
  ...fragmentRendering((i) => `$${i}`, literal),
  now: NOW,
  timeParam: (date) => date.toISOString(),
  parseTime: (value) => (value == null ? null : value instanceof Date ? value : new Date(String(value))),
}
