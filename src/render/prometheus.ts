// Prometheus text exposition (format 0.0.4), e.g. for node_exporter's textfile collector.
// Every family's HELP and TYPE lines are written even when it has no sample (--by type on an
// empty table), so a scrape always names the same families.
import type {StatusFigures, StatusReport} from '../ops/status.js'
import {family, sample} from './prometheus-text.js'

interface Gauge {
  name: string
  help: string
  value: (f: StatusFigures) => number | null
}

const QUANTILES = [
  ['0.5', 'p50'],
  ['0.95', 'p95'],
  ['0.99', 'p99'],
  ['1', 'max'],
] as const

const GAUGES: Gauge[] = [
  {name: 'outbox_pending', help: 'Events not yet published and not failed (includes in flight and retrying).', value: (f) => f.pending},
  {name: 'outbox_in_flight', help: 'Pending events leased by a relay whose lease is live.', value: (f) => f.inFlight},
  {name: 'outbox_expired_leases', help: 'Pending events whose lease lapsed (relay died or stalled).', value: (f) => f.expiredLeases},
  {name: 'outbox_retrying', help: 'Pending events waiting for another attempt after a failed one.', value: (f) => f.retrying},
  {name: 'outbox_failed', help: 'Events that exhausted their attempts; replay them with outbox replay --failed.', value: (f) => f.failed},
  {name: 'outbox_published_window', help: 'Events published within the status window.', value: (f) => f.published},
  {name: 'outbox_oldest_pending_age_seconds', help: 'Age of the oldest pending event (0 when none).', value: (f) => f.oldestPendingAgeSeconds ?? 0},
  {name: 'outbox_throughput_per_minute', help: 'Events published per minute over the status window.', value: (f) => f.throughputPerMinute},
]

/** the status families, in the order they are written (README's metrics table lists them) */
export const STATUS_FAMILIES = [...GAUGES.map((g) => g.name), 'outbox_latency_seconds', 'outbox_status_window_seconds']

/** written for a partitioned outbox only (its report has `partitions`) */
export const PARTITION_FAMILIES = ['outbox_partition_ahead_seconds']

export function renderPrometheus(report: StatusReport): string {
  const base = {table: report.table}
  const groups: [Record<string, string>, StatusFigures][] = report.byType
    ? report.byType.map((t) => [{...base, event_type: t.eventType}, t])
    : [[base, report]]
  const lines: string[] = []
  for (const gauge of GAUGES) {
    lines.push(...family(gauge.name, 'gauge', gauge.help))
    for (const [labels, figures] of groups) lines.push(sample(gauge.name, labels, gauge.value(figures) ?? 0))
  }
  // A summary: status computes exact nearest-rank quantiles in SQL, no buckets to choose.
  // Its _count and _sum cover the window (not counters since a start): _sum / _count is the
  // window's mean; rate() does not apply.
  lines.push(...family('outbox_latency_seconds', 'summary', 'End-to-end latency (published_at - created_at) of the events published within the status window; quantile 1 is the maximum, NaN when none.'))
  for (const [labels, figures] of groups) {
    for (const [quantile, key] of QUANTILES) lines.push(sample('outbox_latency_seconds', {...labels, quantile}, figures.latencySeconds[key] ?? Number.NaN))
    lines.push(sample('outbox_latency_seconds_sum', labels, figures.latencySumSeconds), sample('outbox_latency_seconds_count', labels, figures.published))
  }
  lines.push(...family('outbox_status_window_seconds', 'gauge', 'Length of the window the published, latency and throughput figures cover.'))
  lines.push(sample('outbox_status_window_seconds', base, report.windowSeconds))
  if (report.partitions) {
    lines.push(...family('outbox_partition_ahead_seconds', 'gauge', 'Seconds until the last range partition ends (negative once passed); past it, events land in the catch-all partition. outbox partitions --ensure keeps it ahead.'))
    lines.push(sample('outbox_partition_ahead_seconds', base, report.partitions.secondsLeft))
  }
  return lines.join('\n') + '\n'
}
