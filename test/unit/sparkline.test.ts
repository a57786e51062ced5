// render/sparkline and render/status-watch: the pictures and lines of `status --watch`.
import {describe, expect, it} from 'vitest'
import {sparkline} from '../../src/render/sparkline.js'
import {statusLine, WatchHistory} from '../../src/render/status-watch.js'
import {report} from '../helpers/status-report.js'

describe('sparkline', () => {
  it('draws one block per value, from 0 (lowest) to the largest shown (highest)', () => {
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7])).toBe('▁▂▃▄▅▆▇█')
    expect(sparkline([0, 50, 100])).toBe('▁▅█')
  })
  it('a steady non-zero figure is full height; all zeros the floor; nothing is nothing', () => {
    expect(sparkline([500, 500, 500])).toBe('███')
    expect(sparkline([0, 0])).toBe('▁▁')
    expect(sparkline([])).toBe('')
  })
  it('keeps the last `width` values, scaled among themselves', () => {
    expect(sparkline([1000, 0, 7, 14], 2)).toBe('▅█')
    expect(sparkline([1, 2, 3], 0)).toBe('')
  })
  it('a missing value is a space and does not move the scale', () => {
    expect(sparkline([null, 2, Number.NaN, 4])).toBe(' ▅ █')
  })
})

describe('status --watch', () => {
  it('draws pending, oldest age and p99 over the reads, each beside its latest figure', () => {
    const history = new WatchHistory()
    for (const [pending, age, p99] of [[0, null, null], [10, 60, 2], [20, 120, 4]] as const) {
      history.add(report({pending, oldestPendingAgeSeconds: age, latencySeconds: {p50: null, p95: null, p99, max: null}}))
    }
    expect(history.render(40).split('\n')).toEqual(['over the last 3 read(s):', '  pending    ▁▅█  20', '  oldest age ▁▅█  2m', '  p99         ▅█  4s', ''])
  })
  it('a narrow terminal shows the latest reads only, heights still from 0', () => {
    const history = new WatchHistory()
    for (let i = 1; i <= 30; i++) history.add(report({pending: i}))
    const line = history.render(10).split('\n')[1]
    expect(line).toBe('  pending    ▆▆▆▇▇▇▇███  30') // 21..30
  })
  it('off a terminal: one plain line per read, no escape codes', () => {
    expect(statusLine(report())).toBe('2026-01-01T00:00:00.000Z pending=10 in_flight=2 expired=1 retrying=1 failed=0 oldest_s=300 published=5 p99_s=30\n')
  })
})
