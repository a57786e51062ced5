// The readable form of `outbox status`: one table row per event type (or the total).
import type {ChalkInstance} from 'chalk'
import type {Breach} from '../ops/thresholds.js'
import type {StatusFigures, StatusReport} from '../ops/status.js'
import {formatAge} from '../core/time.js'
import {palette} from './color.js'
import {renderTable} from './table.js'
import {cell} from './events.js'

const HEAD = ['type', 'pending', 'in flight', 'expired', 'retrying', 'failed', 'oldest', 'published', 'per min', 'p50', 'p95', 'p99', 'max']

export async function renderStatus(report: StatusReport, breaches: Breach[] = []): Promise<string> {
  const c = await palette()
  const rows = (report.byType ?? []).map((t) => row(c, cell(t.eventType, 40), t))
  rows.push(row(c, report.byType ? c.bold('all') : 'all', report))
  const table = await renderTable(HEAD, rows)
  const lines = [`${report.table} at ${report.at} (database clock), window ${formatAge(report.windowSeconds)}`, table]
  if (report.oldestPendingId) {
    lines.push(`oldest pending: ${cell(report.oldestPendingId, 36)} (${cell(report.oldestPendingType, 80)}), ${formatAge(report.oldestPendingAgeSeconds)} old`)
  } else lines.push(c.green('no pending events'))
  for (const b of breaches) lines.push(c.red(`BREACH ${b.message}`))
  return lines.join('\n') + '\n'
}

function row(c: ChalkInstance, label: string, f: StatusFigures): string[] {
  const warn = (n: number, color: (s: string) => string) => (n > 0 ? color(String(n)) : String(n))
  const l = f.latencySeconds
  return [
    label,
    warn(f.pending, c.yellow),
    warn(f.inFlight, c.cyan),
    warn(f.expiredLeases, c.magenta),
    warn(f.retrying, c.yellow),
    warn(f.failed, c.red),
    formatAge(f.oldestPendingAgeSeconds),
    String(f.published),
    String(f.throughputPerMinute),
    formatAge(l.p50),
    formatAge(l.p95),
    formatAge(l.p99),
    formatAge(l.max),
  ]
}
