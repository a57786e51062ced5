// The outbox's partition ranges by created_at, in UTC: a day, an ISO week (from Monday) or a
// calendar month each, labelled by their first day (p20261205). Pure arithmetic: init lays out
// the first ones, `outbox partitions --ensure` the next ones.
import type {PartitionInterval, PartitionRange} from '../../dialects/index.js'

export const PARTITION_INTERVALS: readonly PartitionInterval[] = ['day', 'week', 'month']

const DAY_MS = 86_400_000

/** the start of the period holding `at` */
export function periodStart(at: Date, interval: PartitionInterval): Date {
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate())
  if (interval === 'day') return new Date(day)
  if (interval === 'week') return new Date(day - ((at.getUTCDay() + 6) % 7) * DAY_MS)
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))
}

/** the start of the period after the one starting at `start` */
export function nextPeriod(start: Date, interval: PartitionInterval): Date {
  if (interval === 'month') return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1))
  return new Date(start.getTime() + (interval === 'week' ? 7 : 1) * DAY_MS)
}

export function rangeFrom(start: Date, interval: PartitionInterval): PartitionRange {
  const label = `p${start.toISOString().slice(0, 10).replaceAll('-', '')}`
  return {label, from: start, to: nextPeriod(start, interval)}
}

/** Contiguous ranges from `start` (a period boundary) until one reaches past `until`. */
export function rangesUntil(start: Date, until: Date, interval: PartitionInterval): PartitionRange[] {
  const out: PartitionRange[] = []
  for (let from = start; from.getTime() <= until.getTime(); from = nextPeriod(from, interval)) out.push(rangeFrom(from, interval))
  return out
}

/** init's first ranges: the current period up to a week ahead, and at least the next period. */
export function initialRanges(now: Date, interval: PartitionInterval): PartitionRange[] {
  const start = periodStart(now, interval)
  const ranges = rangesUntil(start, new Date(now.getTime() + 7 * DAY_MS), interval)
  return ranges.length >= 2 ? ranges : [rangeFrom(start, interval), rangeFrom(nextPeriod(start, interval), interval)]
}

/** The interval a range spans (undefined: not one outbox lays out). */
export function intervalOf(from: Date, to: Date): PartitionInterval | undefined {
  const days = (to.getTime() - from.getTime()) / DAY_MS
  if (days === 1) return 'day'
  if (days === 7) return 'week'
  return days >= 28 && days <= 31 && from.getUTCDate() === 1 ? 'month' : undefined
}
