// Adding batches up into a result: counts per event type and the first rows as a sample.
import type {BatchRow} from './batch-rows.js'
import type {BatchSummary} from './batch-summary.js'
import {sampleOf, type SampleEvent} from './events.js'
import type {OpsContext} from './query.js'

export interface Tallied {
  byType: Record<string, number>
  sample: SampleEvent[]
}

export function countBy(map: Record<string, number>, key: string, n = 1): void {
  map[key] = (map[key] ?? 0) + n
}

/** Adds a batch's rows to a result's per-type counts and its sample (first `sampleSize` rows). */
export function tally(out: Tallied, ctx: OpsContext, rows: BatchRow[], sampleSize = 10): void {
  for (const row of rows) {
    countBy(out.byType, String(row.event_type))
    if (out.sample.length < sampleSize) out.sample.push(sampleOf(ctx.db.dialect, row))
  }
}

/** Adds a batch summary to a result's per-type counts and its sample. */
export function tallySummary(out: Tallied, summary: BatchSummary, sampleSize = 10): void {
  for (const [type, n] of Object.entries(summary.byType)) countBy(out.byType, type, n)
  for (const row of summary.sample) if (out.sample.length < sampleSize) out.sample.push(row)
}
