// The one path from an ops query to SQL text: Kysely compiles for the database, our Db runs
// the compiled text and parameters as they are (a precompiled fragment); per-batch values go
// into a statement compiled once (a Template) by parameter position, found through markers.
import {DummyDriver, Kysely, MysqlAdapter, MysqlIntrospector, MysqlQueryCompiler, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql as ksql} from 'kysely'
import {describe, expect, it} from 'vitest'
import {DIALECTS, sql} from '../../dialects/index.js'
import {precompiled} from '../../dialects/sql.js'
import {run, toSql} from '../../src/ops/statements.js'
import {slot, Template} from '../../src/ops/templates.js'

// Kysely instances that compile only, as Db.kysely() does for each database
const pg = new Kysely<any>({
  dialect: {createAdapter: () => new PostgresAdapter(), createDriver: () => new DummyDriver(), createIntrospector: (db) => new PostgresIntrospector(db), createQueryCompiler: () => new PostgresQueryCompiler()},
})
const mysql = new Kysely<any>({
  dialect: {createAdapter: () => new MysqlAdapter(), createDriver: () => new DummyDriver(), createIntrospector: (db) => new MysqlIntrospector(db), createQueryCompiler: () => new MysqlQueryCompiler()},
})

describe('a Kysely query runs as compiled', () => {
  it('its text and parameters reach the driver unchanged, placeholders inside quoted text included', () => {
    const query = pg.selectFrom('a$2').select(ksql<string>`to_char(x, 'HH24:MI:SS"$1?"')`.as('t')).where('a', '=', 'x').where('b', '=', 7)
    const compiled = query.compile()
    expect(DIALECTS.postgres.render.compile(toSql(query))).toEqual({text: compiled.sql, params: ['x', 7]})
    expect(compiled.sql).toContain(`'HH24:MI:SS"$1?"'`)
  })
  it('MySQL\'s ? placeholders likewise', () => {
    const query = mysql.selectFrom('t').select(ksql<string>`'?'`.as('q')).where('x', '=', 1).where('z', '=', 2)
    expect(DIALECTS.mysql.render.compile(toSql(query))).toEqual({text: query.compile().sql, params: [1, 2]})
  })
  it('can be wrapped in text that binds nothing (EXPLAIN), never mixed with bound values nor inlined', () => {
    const statement = toSql(pg.selectFrom('t').selectAll().where('a', '=', 1))
    const explained = sql`EXPLAIN (ANALYZE) ${statement}`
    expect(DIALECTS.postgres.render.compile(explained)).toEqual({text: `EXPLAIN (ANALYZE) ${statement.chunks[0]}`, params: [1]})
    expect(() => sql`SELECT ${2}, ${statement}`).toThrow('wrapped in text that binds no value')
    expect(() => sql`${statement} UNION ${statement}`).toThrow('cannot be spliced into one')
    expect(() => DIALECTS.postgres.render.inline(statement)).toThrow('cannot be printed with its values inlined')
    // a fragment without values prints as it is
    expect(DIALECTS.postgres.render.inline(precompiled('SELECT 1', []))).toBe('SELECT 1')
  })
})

describe('statement templates', () => {
  const query = () => pg.selectFrom('t').selectAll().where('a', '>', slot.cursor_at).where('b', '=', 'fixed').where('c', '<', slot.cursor_id).limit(ksql<number>`${slot.batch_rows}`)
  const template = Template.of({compile: () => query().compile()})

  it('bind each batch its own values into the same text, by parameter position', () => {
    const one = template.bind({cursor_at: '2026-01-01', cursor_id: 'x', batch_rows: 10})
    const two = template.bind({cursor_at: '2026-01-02', cursor_id: 'y', batch_rows: 20, read_at: 'unused'})
    expect(DIALECTS.postgres.render.compile(one)).toEqual({text: query().compile().sql, params: ['2026-01-01', 'fixed', 'x', 10]})
    expect(two.values).toEqual(['2026-01-02', 'fixed', 'y', 20])
    // the pg driver keeps a statement's text and prepared name per chunks array
    expect(two.chunks).toBe(one.chunks)
  })
  it('refuse a marker left without a value', () => {
    expect(() => template.bind({cursor_at: '2026-01-01', batch_rows: 1})).toThrow('statement slot cursor_id has no value')
  })
  it('a marker never becomes text, and a statement holding one is never run unbound', () => {
    expect(() => `${slot.read_at}`).toThrow('batch value read_at was written into SQL text')
    expect(() => pg.selectFrom('t').select(ksql.raw(String(slot.span_lo)).as('x')).compile()).toThrow('written into SQL text')
    const sent: unknown[] = []
    const target = {query: async (s: unknown) => (sent.push(s), []), execute: async () => 0}
    expect(() => run(target, query())).toThrow('without binding them')
    expect(sent).toEqual([])
  })
  it('a statement without markers is the same fragment every batch', () => {
    const plain = Template.of(pg.selectFrom('t').selectAll().where('a', '=', 1))
    expect(plain.bind({})).toBe(plain.bind({cursor_at: 'x'}))
  })
})
