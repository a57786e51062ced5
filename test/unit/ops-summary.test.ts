// The batch summary row: one definition of its columns (dialects/batches.ts BatchSummaryRow),
// written by every plan's summary and read back by readSummary.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {DIALECTS, raw, sql} from '../../dialects/index.js'
import {SUMMARY_INPUT, type BatchSummaryRow} from '../../dialects/batches.js'
import {openDb, type Db} from '../../src/db/index.js'
import {readSummary, summarySelect} from '../../src/ops/batch-summary.js'
import {sqliteUrl} from '../helpers/targets.js'

const EVERY_SUMMARY = ['seen', 'changed', 'by_type', 'sample', 'skipped_ids', 'cursor_at', 'cursor_id']

describe('each plan\'s summary', () => {
  for (const dialect of Object.values(DIALECTS)) {
    it(`${dialect.name}: names each column of the row once`, () => {
      const plan = dialect.batches.plan
      const query = plan.kind === 'one-statement' ? plan.summary({sample: 3, listed: 2}) : plan.summary({sample: 3, listed: 2, span: true})
      const expected = [...EVERY_SUMMARY, ...(plan.kind === 'summary-then-change' ? ['read_at', 'span_lo', 'span_hi'] : []), ...(plan.kind === 'summary-then-change' && plan.updateCounts === 'changed' ? ['unchanged'] : [])]
      expect(Object.keys(query.columns).sort()).toEqual(expected.sort())
      // the select list, one entry per line: `<expression> AS <column>`, or the column alone
      const text = summarySelect(query)
      const list = text.slice('SELECT '.length, text.indexOf('\nFROM '))
      const named = list.split(',\n  ').map((entry) => /(?:^| AS )(\w+)$/.exec(entry)?.[1])
      expect(named.sort()).toEqual(expected.sort())
    })
  }
  it('a summary without a span leaves the span out', () => {
    for (const dialect of Object.values(DIALECTS)) {
      const plan = dialect.batches.plan
      if (plan.kind !== 'summary-then-change') continue
      const text = summarySelect(plan.summary({sample: 0, listed: 0, span: false}))
      expect(text).not.toMatch(/span_lo|span_hi/)
      expect(text).not.toContain(SUMMARY_INPUT.locator)
    }
  })
})

describe('readSummary', () => {
  it('reads counts and JSON as text (MySQL, SQLite) or parsed (pg), the sample in (created_at, id) order', () => {
    const row: BatchSummaryRow = {
      seen: '4',
      changed: '3',
      unchanged: '1',
      by_type: '{"a": 2, "b": 1, "c": 0}',
      sample: '[{"id": "y", "event_type": "b", "created_at": "2026-01-01T00:00:02.000001Z"}, {"id": "x", "event_type": "a", "created_at": "2026-01-01T00:00:01Z"}]',
      skipped_ids: '["z"]',
      cursor_at: '2026-01-01 00:00:04.000001',
      cursor_id: 'w',
      span_lo: 'm',
      span_hi: 'n',
      read_at: '2026-01-01 00:00:05.000000',
    }
    expect(readSummary(row)).toEqual({
      seen: 4,
      changed: 3,
      unchanged: 1,
      byType: {a: 2, b: 1},
      sample: [
        {id: 'x', eventType: 'a', createdAt: '2026-01-01T00:00:01.000Z'},
        {id: 'y', eventType: 'b', createdAt: '2026-01-01T00:00:02.000Z'},
      ],
      skippedIds: ['z'],
      cursor: {at: '2026-01-01 00:00:04.000001', id: 'w'},
      span: {lo: 'm', hi: 'n'},
      readAt: '2026-01-01 00:00:05.000000',
    })
    const parsed = readSummary({seen: 2, changed: 2, by_type: {a: 2}, sample: [], skipped_ids: null, cursor_at: null, cursor_id: null, span_lo: 3, span_hi: 9})
    expect(parsed).toMatchObject({seen: 2, byType: {a: 2}, skippedIds: [], cursor: undefined, span: {lo: 3, hi: 9}, readAt: undefined})
  })
})

describe('the SQLite summary over a real batch', () => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(sqliteUrl())
  })
  afterAll(async () => db.close())

  it('counts, types, sample, skipped ids, cursor and locator span of the rows to change', async () => {
    const plan = DIALECTS.sqlite.batches.plan
    if (plan.kind !== 'summary-then-change') throw new Error('SQLite reads its summary first')
    const {skip, locator} = SUMMARY_INPUT
    const rows = [
      ['a1', 'a', '2026-01-01T00:00:01.000Z', 0, 10],
      ['b2', 'b', '2026-01-01T00:00:02.000Z', 1, 11],
      ['a3', 'a', '2026-01-01T00:00:03.000Z', 0, 12],
      ['a4', 'a', '2026-01-01T00:00:03.000Z', 1, 13],
    ]
    const values = rows.map((r) => `(${r.map((v) => (typeof v === 'string' ? `'${v}'` : v)).join(', ')})`).join(', ')
    const batch = `SELECT column1 AS id, column2 AS event_type, column3 AS created_at, column4 AS ${skip}, column5 AS ${locator} FROM (VALUES ${values})`
    const text = `WITH batch AS (${batch}) ${summarySelect(plan.summary({sample: 5, listed: 5, span: true}))}`
    const [row] = await db.query<BatchSummaryRow>(sql`${raw(text)}`)
    const summary = readSummary(row)
    expect(summary).toMatchObject({seen: 4, changed: 2, byType: {a: 2}, skippedIds: ['b2', 'a4'], cursor: {at: '2026-01-01T00:00:03.000Z', id: 'a4'}, span: {lo: 10, hi: 12}})
    expect(summary.sample.map((s) => s.id)).toEqual(['a1', 'a3'])
    expect(summary.readAt).toMatch(/^\d{4}-\d\d-\d\dT/)
  })
})
