// ops/query without a database: the bridge from Kysely's compiled SQL to fragments, and the
// statement templates ops batches bind their values into.
import {describe, expect, it} from 'vitest'
import {DIALECTS} from '../../dialects/index.js'
import {bindSlots, fromCompiled, run, slot, templateOf} from '../../src/ops/query.js'

const compiled = (sql: string, parameters: unknown[]) => ({sql, parameters, query: {} as never, queryId: {} as never})

describe('fromCompiled', () => {
  it('maps $n placeholders in order and leaves quoted text alone', () => {
    const f = fromCompiled(compiled(`select to_char(x, 'HH24:MI:SS"$1?"') from "a$2" where a = $1 and b = $2`, ['x', 7]))
    expect(DIALECTS.postgres.render.compile(f)).toEqual({text: `select to_char(x, 'HH24:MI:SS"$1?"') from "a$2" where a = $1 and b = $2`, params: ['x', 7]})
  })
  it('reads multi-digit $n placeholders and keeps the text between them', () => {
    const values = Array.from({length: 12}, (_, i) => i + 1)
    const text = `select ${values.map((i) => `$${i}`).join(', ')} where "x$3" = 'y'`
    const f = fromCompiled(compiled(text, values))
    expect(DIALECTS.postgres.render.compile(f)).toEqual({text, params: values})
  })
  it('maps ? placeholders, skipping backquoted identifiers and strings', () => {
    const f = fromCompiled(compiled("select `a?` from t where x = ? and y = '?' and z = ?", [1, 2]))
    expect(DIALECTS.mysql.render.inline(f)).toBe("select `a?` from t where x = 1 and y = '?' and z = 2")
  })
})

describe('statement templates', () => {
  const template = templateOf({compile: () => compiled('select * from t where a > $1 and b = $2 and c < $3', [slot('at'), 'fixed', slot('id')])})
  it('bind each batch its own values into the same text', () => {
    const one = bindSlots(template, {at: '2026-01-01', id: 'x'})
    const two = bindSlots(template, {at: '2026-01-02', id: 'y', unused: 1})
    expect(DIALECTS.postgres.render.compile(one)).toEqual({text: 'select * from t where a > $1 and b = $2 and c < $3', params: ['2026-01-01', 'fixed', 'x']})
    expect(two.values).toEqual(['2026-01-02', 'fixed', 'y'])
    expect(two.chunks).toBe(one.chunks)
  })
  it('refuse a stand-in left without a value, or inlined into the text', () => {
    expect(() => bindSlots(template, {at: '2026-01-01'})).toThrow('statement slot id has no value')
    expect(() => templateOf({compile: () => compiled(`select '${slot('at')}'`, [])})).toThrow('inlined a stand-in')
  })
  it('are never run unbound', () => {
    const sent: unknown[] = []
    const target = {query: async (s: unknown) => (sent.push(s), []), execute: async () => 0}
    expect(() => run(target, {compile: () => compiled('select $1', [slot('at')])})).toThrow('without binding them')
    expect(sent).toEqual([])
  })
})
