// A batch summed up by the database into one row (BatchSummaryRow in dialects/batches.ts):
// the SELECT written from a plan's columns, and the row read back by the same names.
import type {BatchSummaryColumns, BatchSummaryRow, SummaryQuery} from '../../dialects/batches.js'
import type {SampleEvent} from './events.js'
import type {Cursor} from './query.js'
import {num} from './query.js'

export interface BatchSummary {
  /** rows the batch read */
  seen: number
  /** rows it changed */
  changed: number
  byType: Record<string, number>
  /** the first changed rows (at most the sample size asked for), in (created_at, id) order */
  sample: SampleEvent[]
  /** rows read but not changed (leased, or changed meanwhile), at most the number asked for */
  skippedIds: string[]
  /** of the changed rows, those the change finds as it leaves them (SummaryThenChangePlan.updateCounts) */
  unchanged: number
  /** the batch's last (created_at, id) */
  cursor?: Cursor
  /** summary-then-change with a locator: the smallest and largest locator of the rows to change */
  span?: LocatorSpan
  /** summary-then-change: the database clock the summary judged leases at */
  readAt?: string
}

/** Numbers (SQLite's rowid) or ids (InnoDB's clustered key). */
export interface LocatorSpan {
  lo: number | string
  hi: number | string
}

/** The summary's SELECT: each column of the row as `<expression> AS <column>`. */
export function summarySelect(query: SummaryQuery<BatchSummaryColumns>): string {
  const columns = Object.entries(query.columns as Partial<Record<string, string>>)
    .flatMap(([column, expression]) => (expression === undefined ? [] : [expression === column ? column : `${expression} AS ${column}`]))
    .join(',\n  ')
  return `SELECT ${columns}\nFROM ${query.from}`
}

export function readSummary(row: BatchSummaryRow): BatchSummary {
  const sample = json(row.sample, [])
  const byType = json(row.by_type, {})
  return {
    seen: num(row.seen),
    changed: num(row.changed),
    // MySQL's summary also names the types whose rows were all skipped
    byType: Object.fromEntries(Object.entries(byType).filter(([, n]) => n > 0)),
    // in (created_at, id) order: MySQL cannot order inside JSON_ARRAYAGG
    sample: sample
      .map((r) => ({id: String(r.id), eventType: String(r.event_type), createdAt: new Date(r.created_at).toISOString(), key: `${r.created_at} ${r.id}`}))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map(({key: _key, ...event}) => event),
    skippedIds: json(row.skipped_ids, []).map(String),
    unchanged: num(row.unchanged),
    cursor: row.cursor_id == null ? undefined : {at: String(row.cursor_at), id: String(row.cursor_id)},
    span: spanOf(row.span_lo, row.span_hi),
    readAt: row.read_at == null ? undefined : String(row.read_at),
  }
}

/** A JSON column: parsed already (pg's json) or text (MySQL, SQLite); NULL is `empty`. */
function json<T>(value: T | string | null | undefined, empty: T): T {
  if (value == null) return empty
  return typeof value === 'string' ? (JSON.parse(value) as T) : value
}

function spanOf(lo: unknown, hi: unknown): LocatorSpan | undefined {
  if (Number.isSafeInteger(lo) && Number.isSafeInteger(hi)) return {lo: Number(lo), hi: Number(hi)}
  if (typeof lo === 'string' && typeof hi === 'string') return {lo, hi}
  return undefined
}
