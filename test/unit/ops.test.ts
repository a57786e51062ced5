// The ops pieces that need no database: thresholds, the prometheus exposition and error
// truncation (the Kysely-to-fragment path: ops-statements.test.ts).
import {describe, expect, it} from 'vitest'
import {checkSelection} from '../../src/ops/replay.js'
import type {StatusReport} from '../../src/ops/status.js'
import {checkThresholds} from '../../src/ops/thresholds.js'
import {cell} from '../../src/render/events.js'
import {renderPrometheus} from '../../src/render/prometheus.js'
import {UsageError} from '../../src/core/errors.js'

const report = (over: Partial<StatusReport> = {}): StatusReport => ({
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
  throughputPerMinute: 0.083,
  ...over,
})

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

describe('prometheus', () => {
  it('escapes label values and emits HELP/TYPE once per metric', () => {
    const text = renderPrometheus(report({byType: [{...report(), eventType: 'we"ird\\type\n'}]}))
    expect(text).toContain('outbox_pending{table="outbox_events",event_type="we\\"ird\\\\type\\n"} 10')
    expect(text.match(/# TYPE outbox_pending gauge/g)).toHaveLength(1)
    expect(text.endsWith('\n')).toBe(true)
  })
  it('leaves out latency quantiles when nothing was published', () => {
    const text = renderPrometheus(report({latencySeconds: {p50: null, p95: null, p99: null, max: null}}))
    expect(text).not.toMatch(/^outbox_latency_seconds\{/m)
  })
})

describe('replay selection', () => {
  it('needs --since, --ids or --failed, and refuses contradictions', () => {
    expect(() => checkSelection({})).toThrow(UsageError)
    expect(() => checkSelection({failedOnly: true, fromArchive: true})).toThrow(/exclude each other/)
    expect(() => checkSelection({ids: ['nope']})).toThrow(/not an event id/)
    expect(() => checkSelection({failedOnly: true})).not.toThrow()
  })
})

describe('cell', () => {
  it('keeps the first line and marks what was cut', () => {
    expect(cell('short')).toBe('short')
    expect(cell('first\n  at stack')).toBe('first …')
    expect(cell('\n\nError: boom\n  at x')).toBe('Error: boom …')
    expect(cell('x'.repeat(100), 10)).toBe('xxxxxxxxx…')
    expect(cell(null)).toBe('')
  })
  it('never splits a character and shows control characters instead of sending them', () => {
    expect(cell('a'.repeat(58) + '🚀🚀🚀', 60)).toBe('a'.repeat(58) + '🚀…')
    expect(cell('\u001b[2J\u001b]0;pwned\u0007 hi')).toBe('\\u001b[2J\\u001b]0;pwned\\u0007 hi')
    expect(cell('tab\there \u009b31m \u202eevil')).toBe('tab\\u0009here \\u009b31m \\u202eevil')
  })
})

describe('progress on a terminal', () => {
  it('redraws ten times a second at most, however fast batches come back', async () => {
    const {progressLine} = await import('../../src/render/progress.js')
    const writes: string[] = []
    const stream = {isTTY: true, write: (s: string) => writes.push(s)} as unknown as NodeJS.WriteStream
    const line = progressLine('replayed', 1000, stream)
    for (let i = 1; i <= 500; i++) line.update({seen: i * 2, changed: i * 2, batches: i})
    expect(writes.length).toBeLessThan(5) // one, unless the loop itself took over 100 ms
    line.done()
    expect(writes.at(-1)).toBe('\r\x1b[K')
  })
})
