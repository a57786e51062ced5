// In-process relay counters and a batch-latency histogram, rendered as Prometheus text.
// Backlog figures come from the database at scrape time (see metrics-server.ts).
import {family, sample} from '../render/prometheus-text.js'

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

export class RelayMetrics {
  published = 0
  retried = 0
  failed = 0
  /** retries or marks refused because another relay had taken the lease over */
  leaseLost = 0
  batches = 0
  errors = 0
  private readonly buckets = new Array<number>(LATENCY_BUCKETS.length).fill(0)
  private latencySum = 0

  observeBatch(seconds: number): void {
    this.batches++
    this.latencySum += seconds
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) if (seconds <= LATENCY_BUCKETS[i]) this.buckets[i]++
  }

  /** Prometheus exposition format (text 0.0.4). */
  render(): string {
    const lines: string[] = []
    for (const [name, help, value] of this.counters()) lines.push(...family(name, 'counter', help), sample(name, {}, value))
    lines.push(...family('outbox_relay_batch_seconds', 'histogram', 'Time from claim to settled, per batch.'))
    LATENCY_BUCKETS.forEach((le, i) => lines.push(sample('outbox_relay_batch_seconds_bucket', {le: String(le)}, this.buckets[i])))
    lines.push(
      sample('outbox_relay_batch_seconds_bucket', {le: '+Inf'}, this.batches),
      sample('outbox_relay_batch_seconds_sum', {}, this.latencySum),
      sample('outbox_relay_batch_seconds_count', {}, this.batches),
    )
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
export const RELAY_FAMILIES = [...new RelayMetrics().counters().map(([name]) => name), 'outbox_relay_batch_seconds']
