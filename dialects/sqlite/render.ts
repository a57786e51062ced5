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
  parseTime: (value) => (value == null ? null : typeof value === 'string' ? parseStoredTime(value) : new Date(String(value))),
}

/**
 * A time as SQLite stores ours (NOW: 'YYYY-MM-DDTHH:MM:SS.sssZ'), read field by field; any
 * other text goes to Date's own parser. The same instant as `new Date(text)` (test/dialects/
 * sqlite-time.test.ts), in about half the instructions: the relay reads a claim's 100
 * created_at, and Date's parser was about 4% of a SQLite batch's (bench/results/relay-gap.md).
 */
export function parseStoredTime(text: string): Date {
  if (text.length !== 24 || text.charCodeAt(23) !== 90 /* Z */) return new Date(text)
  const year = digits(text, 0, 4)
  const month = digits(text, 5, 2)
  const day = digits(text, 8, 2)
  const hour = digits(text, 11, 2)
  const minute = digits(text, 14, 2)
  const second = digits(text, 17, 2)
  const ms = digits(text, 20, 3)
  const separators = text[4] === '-' && text[7] === '-' && text[10] === 'T' && text[13] === ':' && text[16] === ':' && text[19] === '.'
  // out of range (or not digits, -1): Date's parser decides (24:00, say, which it takes)
  if (!separators || year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || ms < 0) return new Date(text)
  return new Date(((daysFromCivil(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + ms)
}

/** `count` decimal digits at `at` as a number; -1 if any is not a digit */
function digits(text: string, at: number, count: number): number {
  let n = 0
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - 48
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil); a day past the month's end runs into the next, as in Date.UTC. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  return era * 146097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - 719468
}
