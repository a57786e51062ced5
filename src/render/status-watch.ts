// `outbox status --watch`: on a terminal, sparklines of pending, oldest age and p99 over the
// reads so far beside today's figures, under the usual table; off a terminal, one plain line
// per read.
import type {StatusReport} from '../ops/status.js'
import {formatAge} from '../core/time.js'
import {sparkline} from './sparkline.js'

/** the most reads a sparkline keeps: wider than any terminal's room for one */
const KEEP = 200

const TRENDS = [
  ['pending', (r: StatusReport) => r.pending, (r: StatusReport) => String(r.pending)],
  ['oldest age', (r: StatusReport) => r.oldestPendingAgeSeconds ?? 0, (r: StatusReport) => formatAge(r.oldestPendingAgeSeconds)],
  ['p99', (r: StatusReport) => r.latencySeconds.p99, (r: StatusReport) => formatAge(r.latencySeconds.p99)],
] as const

/** The figures of every read while watching, oldest first. */
export class WatchHistory {
  private readonly reads: StatusReport[] = []

  add(report: StatusReport): void {
    this.reads.push(report)
    if (this.reads.length > KEEP) this.reads.shift()
  }

  /** one line per figure: its name, its sparkline `width` wide at most, today's value */
  render(width: number): string {
    const latest = this.reads.at(-1)
    if (!latest) return ''
    const shown = Math.min(width, this.reads.length)
    const lines = [`over the last ${shown} read(s):`]
    for (const [label, value, figure] of TRENDS) {
      const line = sparkline(this.reads.map(value), width).padEnd(shown)
      lines.push(`  ${label.padEnd(10)} ${line}  ${figure(latest)}`)
    }
    return lines.join('\n') + '\n'
  }
}

/** The read as one plain line (logfmt), for --watch off a terminal. */
export function statusLine(r: StatusReport): string {
  const age = (s: number | null) => (s === null ? '-' : String(s))
  return `${r.at} pending=${r.pending} in_flight=${r.inFlight} expired=${r.expiredLeases} retrying=${r.retrying} failed=${r.failed} oldest_s=${age(r.oldestPendingAgeSeconds)} published=${r.published} p99_s=${age(r.latencySeconds.p99)}\n`
}
