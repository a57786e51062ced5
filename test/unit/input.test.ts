// Identifiers, durations, times, URLs and redaction: the input checks every command relies on.
import {describe, expect, it} from 'vitest'
import {DIALECTS, dialectForUrl} from '../../dialects/index.js'
import {redactSecrets, redactUrl, resolveUrl} from '../../src/config.js'
import {UsageError} from '../../src/core/errors.js'
import {resolveTables, validateIdentifier} from '../../src/schema/tables.js'
import {formatAge, parseDuration, parseTimePoint} from '../../src/core/time.js'
import {sqlitePath} from '../../src/db/url.js'
import {uuidv7, isUuid} from '../../src/core/uuid.js'

describe('identifiers', () => {
  it.each(['outbox_events', '_x', 'T1'])('accepts %s', (name) => expect(validateIdentifier(name, 'table')).toBe(name))
  it.each(['', 'a b', 'a;b', 'a"b', "a'b", 'ünïcode', '1abc', 'select', 'ORDER', 'a-b', 'x'.repeat(64)])('refuses %j', (name) => {
    expect(() => validateIdentifier(name, 'table', DIALECTS.postgres)).toThrow(UsageError)
  })
  it('checks that derived index names fit the dialect', () => {
    expect(() => resolveTables({table: 'x'.repeat(60)}, DIALECTS.postgres)).toThrow(/at most 48 fit on postgres/)
    expect(resolveTables({table: 'x'.repeat(40)}, DIALECTS.postgres).outbox).toHaveLength(40)
  })
  it('refuses --schema outside PostgreSQL and equal table names', () => {
    expect(() => resolveTables({schema: 'app'}, DIALECTS.mysql)).toThrow(/schema names a schema; MySQL\/MariaDB has none/)
    expect(() => resolveTables({table: 'same', inboxTable: 'same'})).toThrow(/differ/)
  })
})

describe('durations and times', () => {
  it('parses units and combinations', () => {
    expect(parseDuration('500ms')).toBe(500)
    expect(parseDuration('30s')).toBe(30_000)
    expect(parseDuration('1h30m')).toBe(5_400_000)
    expect(parseDuration('7d')).toBe(604_800_000)
  })
  it.each(['', '30', '-5s', 'abc', '5 s', '1y', '0s', '99999d'])('refuses %j', (text) => expect(() => parseDuration(text, 'lease')).toThrow(UsageError))
  it('reads ISO-8601 with offsets, bare dates as UTC, durations as ago', () => {
    const now = new Date('2026-06-01T12:00:00Z')
    expect(parseTimePoint('2026-05-31T10:00:00+02:00', 'since').toISOString()).toBe('2026-05-31T08:00:00.000Z')
    expect(parseTimePoint('2026-05-31', 'since').toISOString()).toBe('2026-05-31T00:00:00.000Z')
    // a Date holds milliseconds: finer digits would move the bound, so they are refused unless zero
    expect(parseTimePoint('2026-05-31T10:00:00.123000Z', 'since').toISOString()).toBe('2026-05-31T10:00:00.123Z')
    expect(() => parseTimePoint('2026-05-31T10:00:00.0005Z', 'until')).toThrow(/finer than a millisecond/)
    expect(() => parseTimePoint('0000-01-01', 'since')).toThrow(/before the year 1000/)
    expect(parseTimePoint('2h', 'since', now).toISOString()).toBe('2026-06-01T10:00:00.000Z')
  })
  it.each(['yesterday', '2026-13-45', '2026-02-30', '2026-05-31T10:00:00', '2026-05-31T25:00:00Z', 'now'])('refuses time %j', (text) =>
    expect(() => parseTimePoint(text, 'since')).toThrow(UsageError),
  )
  it('formats ages with two units at most', () => {
    expect(formatAge(0.25)).toBe('250ms')
    expect(formatAge(42)).toBe('42s')
    expect(formatAge(3 * 86400 + 4 * 3600 + 5)).toBe('3d 4h')
    expect(formatAge(null)).toBe('-')
  })
})

describe('URLs and secrets', () => {
  it('finds the dialect from the scheme', () => {
    expect(dialectForUrl('postgresql://h/db')?.name).toBe('postgres')
    expect(dialectForUrl('mariadb://h/db')?.name).toBe('mysql')
    expect(dialectForUrl('sqlite::memory:')?.name).toBe('sqlite')
    expect(dialectForUrl('oracle://h/db')).toBeUndefined()
    expect(dialectForUrl('no-scheme')).toBeUndefined()
  })
  it('reads sqlite paths', () => {
    expect(sqlitePath('sqlite:./a.db')).toBe('./a.db')
    expect(sqlitePath('sqlite:///tmp/a.db')).toBe('/tmp/a.db')
    expect(sqlitePath('sqlite::memory:')).toBe(':memory:')
  })
  it('masks passwords in URLs and in any text that repeats them', () => {
    expect(redactUrl('postgres://app:s3cr%40t@db:5432/x')).toBe('postgres://app:***@db:5432/x')
    const url = 'mysql://root:hunter22@127.0.0.1/test'
    expect(redactSecrets(`Access denied for 'root' using password hunter22 (${url})`, url)).not.toContain('hunter22')
    expect(redactSecrets('connect to postgres://u:p%40ss@h/db failed', 'postgres://u:p%40ss@h/db')).toBe('connect to postgres://u:***@h/db failed')
    // unencoded '@', '?', '#', '/' in the password, and a password query parameter
    for (const [url, secret] of [
      ['postgres://u:p@ss@127.0.0.1:1/x', 'p@ss'],
      ['postgres://u:p?ss@127.0.0.1/x', 'p?ss'],
      ['mysql://u:p#ss@127.0.0.1/x', 'p#ss'],
      ['postgres://u:p/ss@127.0.0.1/x', 'p/ss'],
      ['postgres://127.0.0.1:5432/test?password=s3cretpw&user=nobody', 's3cretpw'],
    ]) {
      expect(redactUrl(url), url).not.toContain(secret.slice(1))
      expect(redactSecrets(`cannot reach ${url}: refused (${secret})`, url), url).not.toContain(secret)
    }
    expect(redactUrl('postgres://127.0.0.1:5432/test?password=s3cretpw&user=nobody')).toBe('postgres://127.0.0.1:5432/test?password=***&user=nobody')
  })
  it('takes --url, then OUTBOX_DATABASE_URL, then DATABASE_URL', () => {
    expect(resolveUrl('sqlite:a', {OUTBOX_DATABASE_URL: 'sqlite:b'})).toBe('sqlite:a')
    expect(resolveUrl(undefined, {OUTBOX_DATABASE_URL: 'sqlite:b', DATABASE_URL: 'sqlite:c'})).toBe('sqlite:b')
    expect(resolveUrl(undefined, {DATABASE_URL: 'sqlite:c'})).toBe('sqlite:c')
    expect(() => resolveUrl(undefined, {})).toThrow(/no database URL/)
  })
})

describe('uuid v7', () => {
  it('is a version-7 UUID ordered by time', () => {
    const a = uuidv7(1_700_000_000_000)
    const b = uuidv7(1_700_000_000_001)
    expect(isUuid(a)).toBe(true)
    expect(a[14]).toBe('7')
    expect(a < b).toBe(true)
  })
  it('is monotonic within a process: ids of one millisecond, or of a clock that stepped back, still ascend', () => {
    const ids = [uuidv7(1_800_000_000_000), ...Array.from({length: 5000}, () => uuidv7(1_800_000_000_000)), uuidv7(1_799_999_999_000)]
    for (let i = 1; i < ids.length; i++) expect(ids[i] > ids[i - 1], `${ids[i - 1]} then ${ids[i]}`).toBe(true)
    expect(ids.every((id) => isUuid(id) && id[14] === '7' && '89ab'.includes(id[19]))).toBe(true)
  })
})
