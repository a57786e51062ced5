import {Flags} from '@oclif/core'
import {duration, nonNegativeInt} from '../src/cli/flags.js'
import {OpsCommand, opsFlags} from '../src/cli/ops-command.js'
import {UsageError} from '../src/core/errors.js'
import {checkThresholds, type Breach, type Thresholds} from '../src/ops/thresholds.js'
import type {StatusReport} from '../src/ops/status.js'

/** `--json` (schemas/output/status.schema.json). */
export type StatusOutput = StatusReport & {breaches: Breach[]}

export default class Status extends OpsCommand {
  static override summary = 'Show the backlog, failures and end-to-end latency; exit 1 when a threshold is breached'
  static override description = `Every figure comes from the database clock:
- pending: unpublished and not failed (includes the next three)
- inFlight: leased by a relay, lease still live
- expiredLeases: leased, lease lapsed (relay died or stalled); claimable again
- retrying: not leased, attempted before: waiting for its next attempt
- failed: exhausted its attempts (outbox failed; outbox replay --failed)
- published: published within --window (at most 3650d), with end-to-end
  latency (published_at - created_at) as nearest-rank p50/p95/p99/max, and
  throughput (published per minute)

Status reads only the pending rows, the failed rows and the window, through indexes, so it costs the same on a table of 10M published rows as on one of 100k.

On a partitioned outbox (init --partition-by), status warns on stderr when the last partition ends within 3 days (--json: partitions.warning); the exit code stays.

Thresholds breach when the figure is strictly greater than the limit; each breach is printed (stderr) and the exit code is 1, so status can gate a CI pipeline or a cron alert. A window with nothing published has no latency, so --max-latency-p99 cannot breach then (watch --max-age for a stalled relay).

Exit codes: 0 all within limits, 1 a threshold breached, 2 bad input, an unreachable database or a missing table.`
  static override examples = [
    '<%= config.bin %> status --url postgres://app@db/app',
    '<%= config.bin %> status --by type --window 15m',
    '<%= config.bin %> status --json',
    '<%= config.bin %> status --format prometheus > /var/lib/node_exporter/textfile/outbox.prom',
    '<%= config.bin %> status --max-pending 1000 --max-age 5m --max-failed 0 --max-latency-p99 30s',
    '<%= config.bin %> status --watch 2s',
  ]
  static override flags = {
    ...opsFlags,
    window: duration({description: 'window for published, latency and throughput', default: '1h', helpValue: 'DURATION'}),
    by: Flags.string({description: 'break every figure down per event_type', options: ['type']}),
    format: Flags.string({description: 'output format (--json for JSON)', options: ['table', 'prometheus'], default: 'table'}),
    'max-pending': nonNegativeInt({description: 'breach when pending exceeds N', helpValue: 'N', helpGroup: 'THRESHOLD', max: 1e12}),
    'max-age': duration({description: 'breach when the oldest pending event is older than this', helpValue: 'DURATION', helpGroup: 'THRESHOLD', allowZero: true}),
    'max-failed': nonNegativeInt({description: 'breach when failed exceeds N (0: any failed event)', helpValue: 'N', helpGroup: 'THRESHOLD', max: 1e12}),
    'max-latency-p99': duration({description: 'breach when the window p99 latency exceeds this', helpValue: 'DURATION', helpGroup: 'THRESHOLD', allowZero: true}),
    watch: duration({description: 'read again every interval until stopped: a terminal redraws with sparklines of pending, oldest age and p99; off one, a plain line per read', helpValue: 'DURATION'}),
  }

  protected override defaultTimeout(): number | undefined {
    // --watch runs until stopped; everything else is one-shot
    return this.argv.some((a) => a === '--watch' || a.startsWith('--watch=')) ? undefined : super.defaultTimeout()
  }

  async run(): Promise<StatusOutput> {
    const {flags, raw} = await this.parse(Status)
    const thresholds: Thresholds = {
      maxPending: flags['max-pending'],
      maxAge: seconds(flags['max-age']),
      maxFailed: flags['max-failed'],
      maxLatencyP99: seconds(flags['max-latency-p99']),
    }
    const prometheus = flags.format === 'prometheus'
    if (prometheus && this.jsonEnabled()) throw new UsageError('--json and --format prometheus are two formats', 'Pick one')
    const watchMs = flags.watch
    if (watchMs !== undefined && (this.jsonEnabled() || prometheus)) {
      throw new UsageError('--watch draws a terminal or writes plain lines', 'Use --json or --format prometheus without --watch')
    }
    const settings = await this.connection(flags)
    const {readStatus} = await import('../src/ops/status.js')
    const options = {windowMs: flags.window, byType: flags.by === 'type'}
    const every = raw.find((token) => token.type === 'flag' && token.flag === 'watch')?.input // as the user wrote it

    return this.withDb(settings, async (db) => {
      const read = async () => {
        const report = await readStatus(db, settings.tables, options)
        return {report, breaches: checkThresholds(report, thresholds)}
      }
      if (watchMs === undefined) {
        const {report, breaches} = await read()
        return this.finish(report, breaches, prometheus)
      }
      return this.watch(read, watchMs, every)
    }, {readOnly: true})
  }

  /** Until a signal ends the process: redraws with sparklines on a terminal, a plain line per read off one. */
  private async watch(read: () => Promise<{report: StatusReport; breaches: Breach[]}>, everyMs: number, every: string | undefined): Promise<never> {
    const {renderStatus} = await import('../src/render/status.js')
    const {statusLine, WatchHistory} = await import('../src/render/status-watch.js')
    const history = new WatchHistory()
    for (;;) {
      const {report, breaches} = await read()
      if (process.stdout.isTTY) {
        history.add(report)
        const width = Math.max(10, (process.stdout.columns ?? 80) - 30) // room for the label and the figure
        process.stdout.write(`\x1b[2J\x1b[H${await renderStatus(report, breaches)}${history.render(width)}(every ${every}; Ctrl-C to stop)\n`)
      } else {
        process.stdout.write(statusLine(report))
        for (const b of breaches) process.stderr.write(`outbox: threshold breached: ${b.message}\n`)
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs))
    }
  }

  private async finish(report: StatusReport, breaches: Breach[], prometheus: boolean) {
    if (prometheus) {
      const {renderPrometheus} = await import('../src/render/prometheus.js')
      process.stdout.write(renderPrometheus(report))
    } else if (!this.jsonEnabled()) {
      const {renderStatus} = await import('../src/render/status.js')
      process.stdout.write(await renderStatus(report)) // breaches go to stderr below
    }
    for (const b of breaches) process.stderr.write(`outbox: threshold breached: ${b.message}\n`)
    // a warning, not a breach: the exit code stays (--json has it in partitions.warning)
    if (report.partitions?.warning) process.stderr.write(`outbox: warning: ${report.partitions.warning}\n`)
    // exit 1 after the output (JSON included), not instead of it
    if (breaches.length > 0) process.exitCode = 1
    return {...report, breaches}
  }
}

function seconds(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : ms / 1000
}
