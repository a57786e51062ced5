// A status report with every figure set, for the code that reads one (thresholds, the
// prometheus exposition); a test overrides the figures it is about.
import type {StatusReport} from '../../src/ops/status.js'

export const report = (over: Partial<StatusReport> = {}): StatusReport => ({
  at: '2026-01-01T00:00:00.000Z',
  windowSeconds: 3600,
  table: 'outbox_events',
  pending: 10,
  inFlight: 2,
  expiredLeases: 1,
  retrying: 1,
  failed: 0,
  published: 5,
  oldestPendingAgeSeconds: 300,
  oldestPendingId: 'x',
  oldestPendingType: 'a',
  latencySeconds: {p50: 1, p95: 2, p99: 30, max: 31},
  latencySumSeconds: 36.5,
  throughputPerMinute: 0.083,
  ...over,
})
