// examples/grafana/outbox.json against what is really served: a relay process (the built CLI)
// with its metrics server on PostgreSQL (a partitioned outbox, so the partitions panel's gauge is
// served too), scraped after it delivered events, and
// `outbox status --format prometheus` on the same table. Every metric a panel or variable
// query names must be in the relay's /metrics; the status-based panels' also in status's.
import {readFileSync} from 'node:fs'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {cli, cliAsync} from '../helpers/cli.js'
import {count, seedEvents} from '../helpers/events.js'
import {promtoolAvailable, promtoolCheckQueries} from '../helpers/promtool.js'
import {until} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

interface Target {
  expr: string
  datasource: {type: string; uid: string}
}
interface Panel {
  title: string
  datasource: {type: string; uid: string}
  targets: Target[]
}
interface Dashboard {
  panels: Panel[]
  templating: {list: {name: string; type: string; query: string | {query: string}; datasource?: {uid: string}}[]}
}

const dashboard = JSON.parse(readFileSync(new URL('../../examples/grafana/outbox.json', import.meta.url), 'utf8')) as Dashboard
const variableQueries = dashboard.templating.list.filter((v) => v.type === 'query').map((v) => (typeof v.query === 'string' ? v.query : v.query.query))
const queries: [string, string][] = [
  ...dashboard.panels.flatMap((p) => p.targets.map((t): [string, string] => [p.title, t.expr])),
  ...variableQueries.map((q): [string, string] => ['variable', q]),
]

/** the metric names a query uses: ours all start with outbox_ (labels and functions do not) */
const metricNames = (expr: string) => [...new Set(expr.match(/\boutbox_[a-z_]+\b/g) ?? [])]
/** the names of the samples an exposition holds */
const served = (text: string) => new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split(/[{ ]/)[0]))

describe('the Grafana dashboard', () => {
  it('takes its data source from a variable, in every panel and query', () => {
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({name: 'datasource', type: 'datasource', query: 'prometheus'}))
    for (const panel of dashboard.panels) {
      expect(panel.datasource, panel.title).toEqual({type: 'prometheus', uid: '${datasource}'})
      expect(panel.targets.length, panel.title).toBeGreaterThan(0)
      for (const t of panel.targets) expect(t.datasource.uid, panel.title).toBe('${datasource}')
    }
  })

  it('has a panel for each thing an operator reads', () => {
    const used = new Set(queries.flatMap(([, expr]) => metricNames(expr)))
    const subjects = {backlog: 'outbox_pending', oldestAge: 'outbox_oldest_pending_age_seconds', failed: 'outbox_failed', publishRate: 'outbox_relay_published_total', latency: 'outbox_latency_seconds', leaseLosses: 'outbox_relay_lease_lost_total', errors: 'outbox_relay_errors_total', partitionsAhead: 'outbox_partition_ahead_seconds'}
    for (const [subject, name] of Object.entries(subjects)) expect(used.has(name), subject).toBe(true)
  })

  it.skipIf(!promtoolAvailable)("every panel query parses with Prometheus's own parser (Grafana's variables filled in)", () => {
    // (the variable's label_values() is Grafana's, not PromQL)
    const filled = queries.filter(([title]) => title !== 'variable').map(([, expr]) => expr.replaceAll('$__rate_interval', '5m').replaceAll('$table', '.*'))
    const check = promtoolCheckQueries(filled)
    expect(check.ok, check.output).toBe(true)
    expect(check.output).toContain(`SUCCESS: ${filled.length} rules found`)
  })
})

const [pg] = await targets(['postgres'])

describe.skipIf(!pg.available)('the Grafana dashboard against a real relay on PostgreSQL', () => {
  let db: Db
  let names: TableNames
  let relayText = ''
  let statusText = ''

  beforeAll(async () => {
    ;({db, names} = await openTables(pg.url, 'graf', {inbox: false, archive: false, partitionBy: 'day'}))
    await seedEvents(db, names, {count: 5})
    const relay = cliAsync(['relay', '--url', pg.url, '--table', names.outbox, '--publisher', 'stdout', '--poll', '50ms', '--metrics-port', '0', '--log-format', 'json'])
    try {
      await until(async () => (await count(db, names, 'published_at IS NOT NULL')) === 5, 30_000, 'the relay to publish')
      await until(() => relay.output().stderr.includes('"msg":"metrics"'), 10_000, 'the metrics line')
      const line = relay.output().stderr.split('\n').find((l) => l.includes('"msg":"metrics"'))!
      relayText = await (await fetch(JSON.parse(line).url)).text()
    } finally {
      relay.child.kill('SIGTERM')
      await relay.done
    }
    const status = cli(['status', '--url', pg.url, '--table', names.outbox, '--format', 'prometheus'])
    expect(status.status, status.stderr).toBe(0)
    statusText = status.stdout
  })
  afterAll(() => closeTables(db, names))

  it("every metric a query names is in the relay's /metrics", () => {
    const relay = served(relayText)
    expect(relay.has('outbox_relay_published_total')).toBe(true)
    for (const [title, expr] of queries) {
      const names = metricNames(expr)
      expect(names.length, `${title}: ${expr}`).toBeGreaterThan(0)
      for (const name of names) expect(relay.has(name), `${title}: ${name} is not served`).toBe(true)
    }
  })

  it("the status-based panels' metrics are in status --format prometheus too (a textfile collector serves them the same)", () => {
    const status = served(statusText)
    const statusBased = dashboard.panels.filter((p) => p.targets.every((t) => metricNames(t.expr).every((n) => status.has(n))))
    expect(statusBased.map((p) => p.title).sort()).toEqual(['Backlog', 'Backlog', 'End-to-end latency', 'Failed', 'Failed', 'Oldest pending', 'Oldest pending age', 'Partitions ahead'])
    for (const expr of variableQueries) for (const name of metricNames(expr)) expect(status.has(name), name).toBe(true)
  })
})
