// render/prometheus: the text exposition of a status report, and the relay's own metrics,
// checked by Prometheus's own parser (promtool) as well as by what they say.
import {readFileSync} from 'node:fs'
import {describe, expect, it} from 'vitest'
import {PARTITION_FAMILIES, renderPrometheus, STATUS_FAMILIES} from '../../src/render/prometheus.js'
import {RELAY_FAMILIES, RelayMetrics} from '../../src/relay/metrics.js'
import {SERVER_FAMILIES} from '../../src/relay/metrics-server.js'
import {report} from '../helpers/status-report.js'
import {promtoolAvailable, promtoolCheck} from '../helpers/promtool.js'

const none = {p50: null, p95: null, p99: null, max: null}

describe('prometheus', () => {
  it('escapes label values and emits HELP/TYPE once per metric', () => {
    const text = renderPrometheus(report({byType: [{...report(), eventType: 'we"ird\\type\n'}]}))
    expect(text).toContain('outbox_pending{table="outbox_events",event_type="we\\"ird\\\\type\\n"} 10')
    expect(text.match(/# TYPE outbox_pending gauge/g)).toHaveLength(1)
    expect(text.endsWith('\n')).toBe(true)
  })

  it('latency is a summary: quantiles, _sum and _count under one TYPE line', () => {
    const text = renderPrometheus(report())
    expect(text).toMatch(/^# TYPE outbox_latency_seconds summary$/m)
    expect(text).toMatch(/^outbox_latency_seconds\{table="outbox_events",quantile="0.99"\} 30$/m)
    expect(text).toMatch(/^outbox_latency_seconds_sum\{table="outbox_events"\} 36.5$/m)
    expect(text).toMatch(/^outbox_latency_seconds_count\{table="outbox_events"\} 5$/m)
  })

  it('nothing published: NaN quantiles (as client libraries write them) and a zero count', () => {
    const text = renderPrometheus(report({published: 0, latencySumSeconds: 0, latencySeconds: none}))
    expect(text).toMatch(/^outbox_latency_seconds\{table="outbox_events",quantile="0.5"\} NaN$/m)
    expect(text).toMatch(/^outbox_latency_seconds_count\{table="outbox_events"\} 0$/m)
  })

  it('a partitioned outbox: the seconds until its last range ends, negative once passed; none written for an unpartitioned one', () => {
    const ahead = (secondsLeft: number) => ({lastEndsAt: '2026-12-08T00:00:00.000Z', secondsLeft, warning: null})
    expect(renderPrometheus(report({partitions: ahead(172_800)}))).toMatch(/^# TYPE outbox_partition_ahead_seconds gauge\noutbox_partition_ahead_seconds\{table="outbox_events"\} 172800$/m)
    expect(renderPrometheus(report({partitions: ahead(-60)}))).toMatch(/^outbox_partition_ahead_seconds\{table="outbox_events"\} -60$/m)
    expect(renderPrometheus(report())).not.toContain('outbox_partition_ahead_seconds')
  })

  it('--by type with no types still writes every family', () => {
    const text = renderPrometheus(report({byType: []}))
    for (const name of STATUS_FAMILIES) expect(text).toMatch(new RegExp(`^# HELP ${name} .+\\n# TYPE ${name} (gauge|summary)$`, 'm'))
  })

  it.skipIf(!promtoolAvailable)('promtool accepts every shape: total, per type, empty per type, nothing published, the relay', () => {
    const relay = new RelayMetrics()
    relay.observeBatch(0.02)
    relay.observeBatch(3)
    const shapes = {
      total: renderPrometheus(report()),
      perType: renderPrometheus(report({byType: [{...report(), eventType: 'a'}, {...report(), eventType: 'b\n"'}]})),
      emptyPerType: renderPrometheus(report({byType: []})),
      nothingPublished: renderPrometheus(report({published: 0, latencySumSeconds: 0, latencySeconds: none})),
      relay: relay.render() + renderPrometheus(report()),
      partitioned: renderPrometheus(report({partitions: {lastEndsAt: '2026-12-08T00:00:00.000Z', secondsLeft: 3600, warning: null}})),
    }
    for (const [shape, text] of Object.entries(shapes)) expect(promtoolCheck(text), shape).toEqual({ok: true, output: ''})
  })

  it.skipIf(!promtoolAvailable)('promtool refuses what a real parser must refuse (the check can fail)', () => {
    // the exposition before this change: a gauge with a quantile label
    expect(promtoolCheck('# HELP x_seconds x\n# TYPE x_seconds gauge\nx_seconds{quantile="0.5"} 1\n').ok).toBe(false)
    expect(promtoolCheck('x{ 1\n').ok).toBe(false)
    expect(promtoolCheck('').ok).toBe(false)
  })

  it("README's metrics table names exactly the families the relay and status write", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('#### Metrics'), readme.indexOf('### `outbox failed`'))
    const documented = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1])
    expect(documented.sort()).toEqual([...RELAY_FAMILIES, ...SERVER_FAMILIES, ...STATUS_FAMILIES, ...PARTITION_FAMILIES].sort())
  })
})
