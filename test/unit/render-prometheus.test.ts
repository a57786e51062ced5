// render/prometheus: the text exposition of a status report.
import {describe, expect, it} from 'vitest'
import {renderPrometheus} from '../../src/render/prometheus.js'
import {report} from '../helpers/status-report.js'

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
