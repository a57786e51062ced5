// In-process relay counters and a batch-latency histogram, rendered as Prometheus text.
// Backlog figures come from the database at scrape time (see metrics-server.ts).

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
  render(extra: {pending?: number; oldestPendingSeconds?: number | null; failedTotal?: number} = {}): string {
    const lines: string[] = []
    const metric = (name: string, type: string, help: string, samples: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
      for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`)
    }
    metric('outbox_relay_published_total', 'counter', 'Events the broker acknowledged and the relay marked published.', [['', this.published]])
    metric('outbox_relay_retried_total', 'counter', 'Failed publish attempts scheduled for a retry with backoff.', [['', this.retried]])
    metric('outbox_relay_failed_total', 'counter', 'Events moved to the failed state by this relay.', [['', this.failed]])
    metric('outbox_relay_lease_lost_total', 'counter', 'Settlements skipped because the lease had been taken over.', [['', this.leaseLost]])
    metric('outbox_relay_errors_total', 'counter', 'Relay cycles that failed (database or publisher errors).', [['', this.errors]])
    let cumulative: [string, number][] = LATENCY_BUCKETS.map((le, i) => [`{le="${le}"}`, this.buckets[i]])
    cumulative = [...cumulative, ['{le="+Inf"}', this.batches]]
    lines.push(
      '# HELP outbox_relay_batch_seconds Time from claim to settled, per batch.',
      '# TYPE outbox_relay_batch_seconds histogram',
      ...cumulative.map(([labels, value]) => `outbox_relay_batch_seconds_bucket${labels} ${value}`),
      `outbox_relay_batch_seconds_sum ${this.latencySum}`,
      `outbox_relay_batch_seconds_count ${this.batches}`,
    )
    if (extra.pending !== undefined) metric('outbox_backlog_events', 'gauge', 'Events not yet published and not failed.', [['', extra.pending]])
    if (extra.oldestPendingSeconds !== undefined) {
      metric('outbox_oldest_pending_age_seconds', 'gauge', 'Age of the oldest unpublished, not failed event (database clock); 0 when none.', [['', extra.oldestPendingSeconds ?? 0]])
    }
    if (extra.failedTotal !== undefined) metric('outbox_failed_events', 'gauge', 'Events in the failed state in the table.', [['', extra.failedTotal]])
    return lines.join('\n') + '\n'
  }
}
