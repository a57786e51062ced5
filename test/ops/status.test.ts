// `outbox status` on all three dialects: a state built by direct SQL, so every figure is known.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {applyInit} from '../../src/schema/init.js'
import {databaseNow} from '../../src/ops/query.js'
import {readStatus, type StatusReport} from '../../src/ops/status.js'
import {STATUS_FAMILIES} from '../../src/render/prometheus.js'
import {cli} from '../helpers/cli.js'
import {promtoolAvailable, promtoolCheck} from '../helpers/promtool.js'
import {clear, insertRows, type RowSpec} from '../helpers/rows.js'
import {dropTables, targets, uniqueTables} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()

/**
 * type a: one never-attempted pending (the oldest, 600 s), one in flight, one with a lapsed
 * lease, one retrying, one failed (older than every pending one), ten published in the window
 * with latencies 1..10 s and one published before the window. type b: one pending (200 s),
 * twenty published with latencies 0.1..2.0 s.
 */
function state(): RowSpec[] {
  const rows: RowSpec[] = [
    {type: 'a', created: -600},
    {type: 'a', created: -500, leaseOwner: 'relay-1', leaseUntil: 300, attempts: 1},
    {type: 'a', created: -400, leaseOwner: 'relay-2', leaseUntil: -60, attempts: 1},
    {type: 'a', created: -300, leaseUntil: 30, attempts: 2, lastError: 'broker down'},
    {type: 'a', created: -1000, failed: -100, attempts: 5, lastError: 'poison'},
    {type: 'a', created: -10_000, published: -7200},
    {type: 'b', created: -200},
  ]
  for (let i = 1; i <= 10; i++) rows.push({type: 'a', created: -1800 - i, published: -1800})
  for (let i = 1; i <= 20; i++) rows.push({type: 'b', created: -900 - i / 10, published: -900})
  return rows
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`status on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let oldestId: string
    let bId: string
    const flags = () => ['--url', target.url, '--table', names.outbox, '--archive-table', names.archive]

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `st${target.dialect.slice(0, 2)}`, {inbox: false, archive: true}))
      const now = await databaseNow(db)
      const ids = await insertRows(db, names, now, state())
      oldestId = ids[0]
      bId = ids[6]
    })
    afterAll(() => closeTables(db, names))

    it('counts every state and the window from the database clock', async () => {
      const r = await readStatus(db, names, {windowMs: 3_600_000})
      expect(r).toMatchObject({pending: 5, inFlight: 1, expiredLeases: 1, retrying: 1, failed: 1, published: 30})
      expect(r.oldestPendingId).toBe(oldestId)
      expect(r.oldestPendingType).toBe('a')
      expect(r.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(600)
      expect(r.oldestPendingAgeSeconds).toBeLessThan(630)
      // 30 latencies sorted: 0.1..0.9, 1, 1, 1.1..1.9, 2, 2, 3..10; nearest rank 15, 29, 30, 30
      expect(r.latencySeconds).toEqual({p50: 1.4, p95: 9, p99: 10, max: 10})
      expect(r.latencySumSeconds).toBe(76) // 1+..+10 and 0.1+..+2.0
      expect(r.throughputPerMinute).toBe(0.5)
      expect(r.byType).toBeUndefined()
    })

    it('breaks everything down per type', async () => {
      const r = await readStatus(db, names, {windowMs: 3_600_000, byType: true})
      const [a, b] = r.byType!
      expect(a).toMatchObject({eventType: 'a', pending: 4, inFlight: 1, expiredLeases: 1, retrying: 1, failed: 1, published: 10, oldestPendingId: oldestId})
      expect(a.latencySeconds).toEqual({p50: 5, p95: 10, p99: 10, max: 10})
      expect([a.latencySumSeconds, b.latencySumSeconds]).toEqual([55, 21])
      expect(b).toMatchObject({eventType: 'b', pending: 1, inFlight: 0, expiredLeases: 0, retrying: 0, failed: 0, published: 20, oldestPendingId: bId})
      expect(b.latencySeconds).toEqual({p50: 1, p95: 1.9, p99: 2, max: 2})
      expect(b.throughputPerMinute).toBe(0.333)
      expect(b.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(200)
    })

    it('the window bounds published, latency and throughput', async () => {
      const r = await readStatus(db, names, {windowMs: 2 * 3_600_000 + 60_000})
      expect(r.published).toBe(31)
      expect(r.latencySeconds.max).toBe(2800)
      const short = await readStatus(db, names, {windowMs: 1_000_000})
      expect(short.published).toBe(20) // only b's, published 900 s ago
      expect(short.latencySeconds.max).toBe(2)
    })

    it('--json carries the documented field names', () => {
      const r = cli(['status', ...flags(), '--json'])
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      const json = JSON.parse(r.stdout) as StatusReport & {breaches: unknown[]}
      for (const key of ['pending', 'inFlight', 'expiredLeases', 'retrying', 'failed', 'published', 'oldestPendingAgeSeconds', 'oldestPendingId', 'oldestPendingType', 'throughputPerMinute']) {
        expect(json).toHaveProperty(key)
      }
      expect(json.latencySeconds).toEqual({p50: 1.4, p95: 9, p99: 10, max: 10})
      expect(json.breaches).toEqual([])
    })

    it('every threshold passes at its limit and breaches above it, exit 1', () => {
      const within = cli(['status', ...flags(), '--max-pending', '5', '--max-age', '20m', '--max-failed', '1', '--max-latency-p99', '10s'])
      expect(within.stderr).toBe('')
      expect(within.status).toBe(0)
      for (const [flag, value, name] of [
        ['--max-pending', '4', 'max-pending'],
        ['--max-age', '9m', 'max-age'],
        ['--max-failed', '0', 'max-failed'],
        ['--max-latency-p99', '9s', 'max-latency-p99'],
      ]) {
        const r = cli(['status', ...flags(), flag, value])
        expect(r.status, flag).toBe(1)
        expect(r.stderr).toContain(`threshold breached`)
        expect(r.stderr).toContain(`--${name}`)
        expect(r.stdout).toContain('pending') // the report is still printed
      }
      const json = JSON.parse(cli(['status', ...flags(), '--json', '--max-failed', '0']).stdout)
      expect(json.breaches).toMatchObject([{threshold: 'max-failed', limit: 0, actual: 1}])
    })

    it('--format prometheus parses back to the same figures', () => {
      const r = cli(['status', ...flags(), '--format', 'prometheus', '--by', 'type'])
      expect(r.status).toBe(0)
      const samples = parsePrometheus(r.stdout)
      const get = (name: string, labels: string) => samples.get(`${name}{table="${names.outbox}",${labels}}`)
      expect(get('outbox_pending', 'event_type="a"')).toBe(4)
      expect(get('outbox_in_flight', 'event_type="a"')).toBe(1)
      expect(get('outbox_expired_leases', 'event_type="a"')).toBe(1)
      expect(get('outbox_retrying', 'event_type="a"')).toBe(1)
      expect(get('outbox_failed', 'event_type="a"')).toBe(1)
      expect(get('outbox_published_window', 'event_type="b"')).toBe(20)
      expect(get('outbox_latency_seconds', 'event_type="b",quantile="0.95"')).toBe(1.9)
      expect(get('outbox_latency_seconds', 'event_type="a",quantile="1"')).toBe(10)
      expect(get('outbox_throughput_per_minute', 'event_type="a"')).toBe(0.167)
      expect(get('outbox_latency_seconds_sum', 'event_type="a"')).toBe(55)
      expect(get('outbox_latency_seconds_count', 'event_type="b"')).toBe(20)
      // every family has HELP and TYPE lines before its samples
      for (const name of STATUS_FAMILIES) {
        expect(r.stdout).toMatch(new RegExp(`# HELP ${name} .+\\n# TYPE ${name} (gauge|summary)\\n${name}\\{`))
      }
      if (promtoolAvailable) expect(promtoolCheck(r.stdout)).toEqual({ok: true, output: ''})
    })

    it('renders a table and refuses bad input with exit 2', () => {
      const r = cli(['status', ...flags(), '--by', 'type'])
      expect(r.status).toBe(0)
      // the oldest was written 10 minutes before the seed returned: 11m once a loaded machine lets the command run a minute later
      expect(r.stdout).toMatch(/│ a +│ 4 +│ 1 +│ 1 +│ 1 +│ 1 +│ 1[01]m/)
      for (const bad of [['--window', '5'], ['--max-pending', '-1'], ['--max-age', 'soon'], ['--watch', '2s', '--json']]) {
        const e = cli(['status', ...flags(), ...bad])
        expect(e.status, bad.join(' ')).toBe(2)
        expect(e.stderr.trim().split('\n')).toHaveLength(1)
      }
    })

    // (MySQL's binary collations that also keep trailing spaces apart have different names on
    // MariaDB and MySQL 8; utf8mb4_bin, which both have, still pads: 'x ' = 'x' there)
    it('event types that differ in case are different types, as written', async () => {
      const other = uniqueTables('stc')
      await applyInit(db, other, {inbox: false, archive: true})
      try {
        const now = await databaseNow(db)
        await insertRows(db, other, now, [{type: 'Order.Created', created: -60}, {type: 'order.created', created: -50}, {type: 'ORDER.CREATED', created: -40}, {type: 'order.created', created: -30, failed: -10, attempts: 5}])
        const r = await readStatus(db, other, {windowMs: 3_600_000, byType: true})
        const byType = Object.fromEntries(r.byType!.map((t) => [t.eventType, [t.pending, t.failed]]))
        expect(byType).toEqual({'Order.Created': [1, 0], 'order.created': [1, 1], 'ORDER.CREATED': [1, 0]})
        const failed = (type: string) => JSON.parse(cli(['failed', '--url', target.url, '--table', other.outbox, '--type', type, '--json']).stdout).total
        expect([failed('ORDER.CREATED'), failed('order.created')]).toEqual([0, 1])
      } finally {
        await dropTables(db, other)
      }
    })

    it('an empty table reports zeros and nulls; --format prometheus --by type still writes every family', async () => {
      const other = uniqueTables('ste')
      await applyInit(db, other, {inbox: false, archive: false})
      try {
        const r = await readStatus(db, other, {windowMs: 3_600_000, byType: true})
        expect(r).toMatchObject({pending: 0, failed: 0, published: 0, latencySumSeconds: 0, oldestPendingAgeSeconds: null, oldestPendingId: null, byType: []})
        expect(r.latencySeconds).toEqual({p50: null, p95: null, p99: null, max: null})
        for (const by of [['--by', 'type'], []]) {
          const p = cli(['status', '--url', target.url, '--table', other.outbox, '--format', 'prometheus', ...by])
          expect(p.status).toBe(0)
          for (const name of STATUS_FAMILIES) expect(p.stdout).toMatch(new RegExp(`^# HELP ${name} .+\\n# TYPE ${name} `, 'm'))
          if (promtoolAvailable) expect(promtoolCheck(p.stdout), by.join(' ')).toEqual({ok: true, output: ''})
        }
      } finally {
        await dropTables(db, other)
      }
    })
  })
}

function parsePrometheus(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-z_]+\{[^}]*\}) (\S+)$/.exec(line)
    if (!m) throw new Error(`not an exposition line: ${line}`)
    out.set(m[1], Number(m[2]))
  }
  return out
}
