// The SQL fragment renders the same statement two ways; literals are escaped per dialect.
import {describe, expect, it} from 'vitest'
import {DIALECTS, raw, sql} from '../../dialects/index.js'
import {join} from '../../dialects/sql.js'

describe('sql fragments', () => {
  it('binds values in order and splices raw text and nested fragments', () => {
    const inner = sql`b = ${2}`
    const f = sql`SELECT * FROM ${raw('"t"')} WHERE a = ${1} AND ${inner} AND c IN (${join([sql`${3}`, sql`${4}`])})`
    expect(DIALECTS.postgres.render.compile(f)).toEqual({text: 'SELECT * FROM "t" WHERE a = $1 AND b = $2 AND c IN ($3, $4)', params: [1, 2, 3, 4]})
    expect(DIALECTS.mysql.render.compile(f).text).toBe('SELECT * FROM "t" WHERE a = ? AND b = ? AND c IN (?, ?)')
    expect(DIALECTS.sqlite.render.inline(f)).toBe('SELECT * FROM "t" WHERE a = 1 AND b = 2 AND c IN (3, 4)')
  })

  it('a value that looks like a placeholder or SQL stays a value', () => {
    const f = sql`SELECT ${'$1; DROP TABLE x --'}`
    expect(DIALECTS.postgres.render.compile(f)).toEqual({text: 'SELECT $1', params: ['$1; DROP TABLE x --']})
    expect(DIALECTS.postgres.render.inline(f)).toBe("SELECT '$1; DROP TABLE x --'")
  })
})

describe('literal escaping, one function per dialect', () => {
  const tricky = "it's a \\ back'slash"
  it('postgres doubles quotes and leaves backslashes (standard_conforming_strings)', () => {
    expect(DIALECTS.postgres.render.literal(tricky)).toBe("'it''s a \\ back''slash'")
    expect(DIALECTS.postgres.render.literal(['a', "b'"])).toBe("ARRAY['a', 'b''']")
    expect(DIALECTS.postgres.render.literal(null)).toBe('NULL')
    expect(DIALECTS.postgres.render.literal(new Date('2026-01-02T03:04:05.006Z'))).toBe("'2026-01-02T03:04:05.006Z'::timestamptz")
  })
  it('mysql uses a hex literal when backslashes or control characters would depend on sql_mode', () => {
    expect(DIALECTS.mysql.render.literal("o'brien")).toBe("'o''brien'")
    expect(DIALECTS.mysql.render.literal('a\\b')).toBe(`_utf8mb4 X'${Buffer.from('a\\b').toString('hex')}'`)
    expect(DIALECTS.mysql.render.literal('line\nbreak')).toMatch(/^_utf8mb4 X'/)
    expect(DIALECTS.mysql.render.literal(new Date('2026-01-02T03:04:05.006Z'))).toBe("'2026-01-02 03:04:05.006000'")
  })
  it('sqlite doubles quotes and writes booleans as integers', () => {
    expect(DIALECTS.sqlite.render.literal("it's")).toBe("'it''s'")
    expect(DIALECTS.sqlite.render.literal(true)).toBe('1')
  })
  it('refuses what cannot be inlined safely', () => {
    expect(() => DIALECTS.postgres.render.literal('nul\u0000')).toThrow(/NUL/)
    expect(() => DIALECTS.sqlite.render.literal('nul\u0000')).toThrow(/NUL/)
    expect(DIALECTS.mysql.render.literal('nul\u0000')).toBe("_utf8mb4 X'6e756c00'") // MySQL text can hold NUL; hex is exact
    for (const d of Object.values(DIALECTS)) {
      expect(() => d.render.literal(Number.NaN)).toThrow()
      expect(() => d.render.literal({a: 1})).toThrow()
    }
  })
})

describe('identifier quoting', () => {
  it('doubles the quote character of each dialect', () => {
    expect(DIALECTS.postgres.render.quoteIdent('a"b')).toBe('"a""b"')
    expect(DIALECTS.mysql.render.quoteIdent('a`b')).toBe('`a``b`')
    expect(DIALECTS.postgres.render.table({schema: 's', outbox: 'o', inbox: 'i', archive: 'a'}, 'outbox')).toBe('"s"."o"')
  })
})

describe('deadlock victims are recognised per dialect (the relay reruns them)', () => {
  it('MySQL 1213, PostgreSQL 40P01, never on SQLite; lock timeouts are not deadlocks', () => {
    expect(DIALECTS.mysql.errors.isDeadlock({errno: 1213})).toBe(true)
    expect(DIALECTS.mysql.errors.isDeadlock({errno: 1205})).toBe(false)
    expect(DIALECTS.postgres.errors.isDeadlock({code: '40P01'})).toBe(true)
    expect(DIALECTS.postgres.errors.isDeadlock({code: '55P03'})).toBe(false)
    expect(DIALECTS.sqlite.errors.isDeadlock({code: 'SQLITE_BUSY'})).toBe(false)
  })
})
