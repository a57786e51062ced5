// In-process relay counters and two latency histograms (a batch, its claim), rendered as
// Prometheus text. Backlog figures come from the database at scrape time (see metrics-server.ts).
import {family, sample} from '../render/prometheus-text.js'

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/** A cumulative histogram over LATENCY_BUCKETS, in seconds. */
class Histogram {
  count = 0
  private sum = 0
  private readonly buckets = new Array<number>(LATENCY_BUCKETS.length).fill(0)

  constructor(
    readonly name: string,
    private readonly help: string,
  ) {}

  observe(seconds: number): void {
    this.count++
    this.sum += seconds
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) if (seconds <= LATENCY_BUCKETS[i]) this.buckets[i]++
  }

  render(): string[] {
    const n = this.name
    return [
      ...family(n, 'histogram', this.help),
      ...LATENCY_BUCKETS.map((le, i) => sample(`${n}_bucket`, {le: String(le)}, this.buckets[i])),
      sample(`${n}_bucket`, {le: '+Inf'}, this.count),
      sample(`${n}_sum`, {}, this.sum),
      sample(`${n}_count`, {}, this.count),
    ]
  }
}

export class RelayMetrics {
  published = 0
  retried = 0
  failed = 0
  /** retries or marks refused because another relay had taken the lease over */
  leaseLost = 0
  errors = 0
  private readonly batch = new Histogram('outbox_relay_batch_seconds', 'Time from the claim sent to the batch settled, per batch.')
  // every claim, empty ones too: under a held horizon it is the claim that slows down, batch or none
  private readonly claim = new Histogram('outbox_relay_claim_seconds', 'Time of one claim (moving the low-water mark, carrying the last batch\'s mark), per claim, empty ones included.')

  get batches(): number {
    return this.batch.count
  }

  observeBatch(seconds: number): void {
    this.batch.observe(seconds)
  }

  observeClaim(seconds: number): void {
    this.claim.observe(seconds)
  }

  /** Prometheus exposition format (text 0.0.4). */
  render(): string {
    const lines: string[] = []
    for (const [name, help, value] of this.counters()) lines.push(...family(name, 'counter', help), sample(name, {}, value))
    lines.push(...this.batch.render(), ...this.claim.render())
    return lines.join('\n') + '\n'
  }

  /** the counters: name, help, value */
  counters(): [string, string, number][] {
    return [
      ['outbox_relay_published_total', 'Events the broker acknowledged and the relay marked published.', this.published],
      ['outbox_relay_retried_total', 'Failed publish attempts scheduled for a retry with backoff.', this.retried],
      ['outbox_relay_failed_total', 'Events moved to the failed state by this relay.', this.failed],
      ['outbox_relay_lease_lost_total', 'Settlements skipped because the lease had been taken over.', this.leaseLost],
      ['outbox_relay_errors_total', 'Relay cycles that failed (database or publisher errors).', this.errors],
    ]
  }
}

/** the relay process's own families, in the order render() writes them */
export const RELAY_FAMILIES = [...new RelayMetrics().counters().map(([name]) => name), 'outbox_relay_batch_seconds', 'outbox_relay_claim_seconds']
