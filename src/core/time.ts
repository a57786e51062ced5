// Durations ("30s", "2h", "1d12h") and points in time (ISO-8601 or "2h" meaning ago).
import {UsageError} from './errors.js'

const UNIT_MS: Record<string, number> = {ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000}
const DURATION = /^(?:(\d+(?:\.\d+)?)(ms|s|m|h|d|w))+$/
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g

/**
 * Milliseconds for "500ms", "30s", "5m", "2h", "7d", "1h30m". Bare numbers are refused: units
 * matter. `option` names the value in the error (the CLI spells it as its flag).
 */
export function parseDuration(text: string, option = 'duration', {allowZero = false} = {}): number {
  const value = text.trim()
  if (!DURATION.test(value)) {
    throw new UsageError((o) => `${o(option)} ${JSON.stringify(text)} is not a duration`, 'Use a number with a unit: 500ms, 30s, 5m, 2h, 7d')
  }
  let ms = 0
  for (const [, amount, unit] of value.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit]
  ms = Math.round(ms)
  if (!Number.isSafeInteger(ms) || ms > 10 * 365 * UNIT_MS.d) {
    throw new UsageError((o) => `${o(option)} ${JSON.stringify(text)} is too long`, 'Use at most 3650d')
  }
  if (ms === 0 && !allowZero) throw new UsageError((o) => `${o(option)} must be greater than zero`, 'Use e.g. 30s')
  return ms
}

// Full ISO-8601 date-time with an explicit offset, or a bare date (taken as UTC midnight).
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2}))?$/

/** A point in time: ISO-8601 with offset or Z, a bare date (UTC), or a duration meaning "ago". */
export function parseTimePoint(text: string, option: string, now: Date = new Date()): Date {
  const value = text.trim()
  if (DURATION.test(value)) return new Date(now.getTime() - parseDuration(value, option, {allowZero: true}))
  const m = ISO.exec(value)
  if (m) {
    const [, y, mo, d, h, mi, s] = m.map(Number)
    const hasTime = m[4] !== undefined
    if (hasTime && m[8] === undefined) {
      throw new UsageError((o) => `${o(option)} ${JSON.stringify(text)} has no time zone`, 'Add Z or an offset, e.g. 2026-01-31T12:00:00Z')
    }
    // a Date keeps milliseconds: more digits would be dropped, moving an inclusive or exclusive bound
    if (/[1-9]/.test((m[7] ?? '').slice(3))) {
      throw new UsageError((o) => `${o(option)} ${JSON.stringify(text)} is finer than a millisecond`, 'Give at most 3 fractional digits, e.g. 2026-01-31T12:00:00.123Z')
    }
    // every dialect's timestamps hold years 1000-9999 (MariaDB's DATETIME); PostgreSQL would refuse year 0 mid-run
    if (y < 1000) throw new UsageError((o) => `${o(option)} ${JSON.stringify(text)} is before the year 1000`, 'Give a time from the years 1000-9999')
    const date = new Date(hasTime ? value.replace(' ', 'T') : `${value}T00:00:00Z`)
    const calendarOk = mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn(y, mo) && (!hasTime || (h <= 23 && mi <= 59 && (Number.isNaN(s) || s <= 59)))
    if (calendarOk && !Number.isNaN(date.getTime())) return date
  }
  throw new UsageError(
    (o) => `${o(option)} ${JSON.stringify(text)} is not a time`,
    'Use ISO-8601 with an offset (2026-01-31T12:00:00Z) or a duration meaning ago (30m, 2h, 7d)',
  )
}

/**
 * A point in time checked now but read later: a Date when the text names an instant, the text
 * itself when it is a duration meaning ago, for the caller to read against the clock it means
 * (the ops commands: the database's, not this machine's).
 */
export function checkTimePoint(text: string, option: string): Date | string {
  const at = parseTimePoint(text, option)
  return DURATION.test(text.trim()) ? text : at
}

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}

/** "42s", "5m 3s", "2h 10m", "3d 4h": two units at most, for tables. */
export function formatAge(seconds: number | null | undefined): string {
  if (seconds == null || !Number.isFinite(seconds)) return '-'
  if (seconds < 1) return `${Math.round(seconds * 1000)}ms`
  let rest = Math.round(seconds)
  const parts: string[] = []
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]] as const) {
    if (rest >= size || (unit === 's' && parts.length === 0)) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
    if (parts.length === 2) break
  }
  return parts.join(' ')
}
