// SQLite's stored times read field by field (dialects/sqlite/render.ts parseStoredTime): the same
// instant as Date's own parser for every text, in SQLite's format or not.
import Database from 'better-sqlite3'
import {describe, expect, it} from 'vitest'
import {sqlite} from '../../dialects/sqlite/index.js'
import {NOW, parseStoredTime} from '../../dialects/sqlite/render.js'

const same = (text: string) => expect([text, parseStoredTime(text).getTime()]).toEqual([text, new Date(text).getTime()])

describe('sqlite stored times', () => {
  it('reads what SQLite writes (NOW) as Date does', () => {
    const database = new Database(':memory:')
    const {now} = database.prepare(`SELECT ${NOW} AS now`).get() as {now: string}
    database.close()
    expect(now).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    same(now)
    expect(sqlite.render.parseTime(now)?.toISOString()).toBe(now)
  })

  it('agrees with Date on instants across years 0000-9999', () => {
    let seed = 42
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const lo = Date.parse('0000-01-01T00:00:00.000Z')
    const hi = Date.parse('9999-12-31T23:59:59.999Z')
    for (let i = 0; i < 20_000; i++) same(new Date(Math.floor(lo + next() * (hi - lo))).toISOString())
    for (const text of ['1970-01-01T00:00:00.000Z', '1969-12-31T23:59:59.999Z', '2000-02-29T12:00:00.000Z', '2100-03-01T00:00:00.000Z', '0000-01-01T00:00:00.000Z', '0050-06-15T01:02:03.004Z', '9999-12-31T23:59:59.999Z']) same(text)
  })

  it('leaves what is out of range or not its format to Date, with the same result', () => {
    const texts = [
      '2026-02-29T00:00:00.000Z', // no such day: Date runs into March
      '2026-02-31T00:00:00.000Z',
      '2026-04-31T10:00:00.000Z',
      '2026-00-10T00:00:00.000Z',
      '2026-13-10T00:00:00.000Z',
      '2026-12-00T00:00:00.000Z',
      '2026-12-32T00:00:00.000Z',
      '2026-12-05T24:00:00.000Z',
      '2026-12-05T23:60:00.000Z',
      '2026-12-05T23:59:60.000Z',
      '2026-12-05t23:59:59.000Z',
      '2026-12-05T23:59:59.000z',
      '2026-12-05 23:59:59.000Z',
      '2026/12/05T23:59:59.000Z',
      '2026-12-05T23:59:59,000Z',
      '2026-1a-05T23:59:59.000Z',
      '2026-+1-05T23:59:59.000Z',
      '+02026-12-05T23:59:59.00Z',
      '2026-12-05T23:59:59.000',
      '2026-12-05T23:59:59Z',
      '2026-12-05T23:59:59.0000Z',
      '2026-12-05 23:59:59',
      '2026-12-05',
      '',
      'not a time at all, 24 c.',
    ]
    for (const text of texts) same(text)
  })
})
