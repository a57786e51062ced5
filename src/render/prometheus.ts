// Prometheus text exposition (format 0.0.4), e.g. for node_exporter's textfile collector.
import type {StatusFigures, StatusReport} from '../ops/status.js'

interface Metric {
  name: string
  help: string
  value: (f: StatusFigures) => number | null
  labels?: Record<string, string>
}

const QUANTILES = [
  ['0.5', 'p50'],
  ['0.95', 'p95'],
  ['0.99', 'p99'],
  ['1', 'max'],
] as const

const METRICS: Metric[] = [
  {name: 'outbox_pending', help: 'Events not yet published and not failed (includes in flight and retrying).', value: (f) => f.pending},
  {name: 'outbox_in_flight', help: 'Pending events leased by a relay whose lease is live.', value: (f) => f.inFlight},
  {name: 'outbox_expired_leases', help: 'Pending events whose lease lapsed (relay died or stalled).', value: (f) => f.expiredLeases},
  {name: 'outbox_retrying', help: 'Pending events waiting for another attempt after a failed one.', value: (f) => f.retrying},
  {name: 'outbox_failed', help: 'Events that exhausted their attempts; replay them with outbox replay --failed.', value: (f) => f.failed},
  {name: 'outbox_published_window', help: 'Events published within the status window.', value: (f) => f.published},
  {name: 'outbox_oldest_pending_age_seconds', help: 'Age of the oldest pending event (0 when none).', value: (f) => f.oldestPendingAgeSeconds ?? 0},
  {name: 'outbox_throughput_per_minute', help: 'Events published per minute over the status window.', value: (f) => f.throughputPerMinute},
]

export function renderPrometheus(report: StatusReport): string {
  const base = {table: report.table}
  const groups: [Record<string, string>, StatusFigures][] = report.byType
    ? report.byType.map((t) => [{...base, event_type: t.eventType}, t])
    : [[base, report]]
  const lines: string[] = []
  const gauge = (name: string, help: string) => lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`)
  for (const metric of METRICS) {
    gauge(metric.name, metric.help)
    for (const [labels, figures] of groups) lines.push(sample(metric.name, labels, metric.value(figures) ?? 0))
  }
  gauge('outbox_latency_seconds', 'End-to-end latency (published_at - created_at) over the status window; quantile 1 is the maximum.')
  for (const [labels, figures] of groups) {
    for (const [quantile, key] of QUANTILES) {
      const value = figures.latencySeconds[key]
      if (value !== null) lines.push(sample('outbox_latency_seconds', {...labels, quantile}, value))
    }
  }
  gauge('outbox_status_window_seconds', 'Length of the window the published, latency and throughput figures cover.')
  lines.push(sample('outbox_status_window_seconds', base, report.windowSeconds))
  return lines.join('\n') + '\n'
}

function sample(name: string, labels: Record<string, string>, value: number): string {
  const text = Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',')
  return `${name}{${text}} ${formatValue(value)}`
}

function escapeLabel(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('"', '\\"')
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf'
  return String(value)
}
