// ops/thresholds: when `status --max-*` reports a breach, and how the breach reads.
import {describe, expect, it} from 'vitest'
import {checkThresholds} from '../../src/ops/thresholds.js'
import {report} from '../helpers/status-report.js'

describe('thresholds', () => {
  it('breach only above the limit', () => {
    expect(checkThresholds(report(), {maxPending: 10, maxAge: 300, maxFailed: 0, maxLatencyP99: 30})).toEqual([])
    const breaches = checkThresholds(report({failed: 1}), {maxPending: 9, maxAge: 299, maxFailed: 0, maxLatencyP99: 29.9})
    expect(breaches.map((b) => b.threshold)).toEqual(['max-pending', 'max-age', 'max-failed', 'max-latency-p99'])
    expect(breaches[1].message).toBe('age 5m exceeds --max-age 4m 59s')
    // never two figures that read alike
    const close = checkThresholds(report({latencySeconds: {p50: 1, p95: 2, p99: 500, max: 500}}), {maxLatencyP99: 499.5, maxAge: 0})
    expect(close.map((b) => b.message)).toEqual(['age 5m exceeds --max-age 0s', 'latency-p99 500s exceeds --max-latency-p99 499.5s'])
  })
  it('an empty outbox has no age or latency to breach', () => {
    const empty = report({oldestPendingAgeSeconds: null, latencySeconds: {p50: null, p95: null, p99: null, max: null}})
    expect(checkThresholds(empty, {maxAge: 0, maxLatencyP99: 0})).toEqual([])
  })
})
