#!/usr/bin/env node
// Where a partitioned outbox's relay drain spends its time (issue 25), PostgreSQL: the tables of
// bench/status-profile.js (seed them there, same OUTBOX_BENCH_PREFIX). Per round, drainOnce of
// the 2000 pending events (reset to pending first) on each table with each build (this tree's;
// OUTBOX_BENCH_BEFORE=<dist>: another's too), a new Relay each (as the pairs run it), the order
// rotating; every statement timed from the client, the claims split by the mark they carry.
//   OUTBOX_BENCH_PREFIX=pdprof OUTBOX_BENCH_BEFORE=/work/base-part/dist node bench/drain-profile.js --rounds=10
import {loadavg} from 'node:os'
import {fmt, median} from './lib.js'
import {args, builds, option, tables, URL} from './profile-setup.js'

const noop = {name: 'noop', publish: async (events) => events.map(() => ({ok: true})), close: async () => {}}

function label(text, values) {
  if (/MATERIALIZED/.test(text)) {
    const none = values.some((v) => String(v) === '-infinity')
    const from = /created_at >= \$/.test(text) ? (none ? 'from-none' : 'from-mark') : 'from-start'
    return `claim/${from}${/WITH m AS/.test(text) ? '+mark' : ''}`
  }
  if (/pg_locks/.test(text)) return 'mark-bound'
  if (/least\(/.test(text)) return 'mark-next'
  if (/SET published_at/.test(text)) return 'mark'
  return text.slice(0, 30).replace(/\s+/g, ' ')
}

function timed(db, sink) {
  const time = (fn) => async (statement, options) => {
    const started = performance.now()
    try {
      return await fn(statement, options)
    } finally {
      const c = db.dialect.render.compile(statement)
      sink.push([label(c.text, statement.values ?? []), performance.now() - started, statement])
    }
  }
  const wrap = (q) => new Proxy(q, {get: (t, p) => (p === 'query' || p === 'execute' ? time(t[p].bind(t)) : p === 'transaction' ? (fn, o) => t.transaction((tx, d) => fn(wrap(tx), d), o) : typeof t[p] === 'function' ? t[p].bind(t) : t[p])})
  return wrap(db)
}

const dbs = {}
for (const [build, l] of Object.entries(builds)) dbs[build] = await l.openDb(URL, {poolSize: 3})
try {
  const rounds = option('rounds', 10)
  const runs = []
  const load = [loadavg()[0]]
  const combos = Object.keys(builds).flatMap((build) => ['plain', 'parted'].map((table) => [build, table]))
  for (let i = 0; i < rounds + 1; i++) {
    for (let j = 0; j < combos.length; j++) {
      const [build, table] = combos[(i + j) % combos.length]
      const {sql, raw, Relay} = builds[build]
      const db = dbs[build]
      const t = raw(db.dialect.render.table(tables[table], 'outbox'))
      await db.execute(sql`UPDATE ${t} SET published_at = NULL, lease_owner = NULL, lease_until = NULL, attempts = 0 WHERE event_type = 'bench.pending' AND created_at >= date_trunc('day', now())`)
      await new Promise((r) => setTimeout(r, 250))
      const times = []
      const started = performance.now()
      const result = await new Relay({db: timed(db, times), publisher: noop, tables: tables[table], batch: 100, owner: 'bench-prof'}).drainOnce()
      const total = performance.now() - started
      if (result.published !== 2000) throw new Error(`drained ${result.published}`)
      if (i > 0) runs.push({build, table, total, times})
    }
  }
  load.push(loadavg()[0])
  console.log(`load ${fmt(load[0])} -> ${fmt(load[1])}; ${rounds} rounds; per drain: count x median ms, sum median (client side)`)
  for (const build of Object.keys(builds)) {
    for (const table of ['plain', 'parted']) {
      const mine = runs.filter((r) => r.build === build && r.table === table)
      const parts = {}
      for (const r of mine) {
        const per = {}
        for (const [part, ms] of r.times) (per[part] ??= []).push(ms)
        for (const [part, v] of Object.entries(per)) ((parts[part] ??= {n: [], each: [], sum: []}), parts[part].n.push(v.length), parts[part].each.push(...v), parts[part].sum.push(v.reduce((a, b) => a + b, 0)))
      }
      console.log(`${build}/${table}: total ${fmt(median(mine.map((r) => r.total)), 1)}`)
      for (const [p, v] of Object.entries(parts)) console.log(`   ${p}: ${fmt(median(v.n), 1)} x ${fmt(median(v.each), 2)} ms, sum ${fmt(median(v.sum), 1)}`)
    }
    const plain = runs.filter((r) => r.build === build && r.table === 'plain')
    const parted = runs.filter((r) => r.build === build && r.table === 'parted')
    const ratios = plain.map((p, k) => parted[k].total / p.total)
    console.log(`${build}: partitioned / unpartitioned per round, median ${fmt(median(ratios), 2)}x (${fmt(Math.min(...ratios), 2)}-${fmt(Math.max(...ratios), 2)})`)
  }
  if (args.includes('--explain')) await explain(runs)

} finally {
  for (const db of Object.values(dbs)) await db.close()
}

/** EXPLAIN (ANALYZE, SUMMARY, BUFFERS) of each claim of the last drain per build and table, replayed in order on the backlog reset to pending, rolled back */
async function explain(runs) {
  for (const build of Object.keys(builds)) {
    for (const table of ['plain', 'parted']) {
      const last = runs.filter((r) => r.build === build && r.table === table).at(-1)
      const {sql, raw} = builds[build]
      const db = dbs[build]
      const t = raw(db.dialect.render.table(tables[table], 'outbox'))
      await db.transaction(async (tx) => {
        await tx.execute(sql`UPDATE ${t} SET published_at = NULL, lease_owner = NULL, lease_until = NULL, attempts = 0 WHERE event_type = 'bench.pending' AND created_at >= date_trunc('day', now())`)
        for (const [part, , statement] of last.times) {
          if (!part.startsWith('claim') && !part.startsWith('mark-next')) continue
          const rows = await tx.query(sql`EXPLAIN (ANALYZE, SUMMARY, BUFFERS) ${statement}`)
          const text = rows.map((r) => r['QUERY PLAN']).join('\n')
          const of = (name) => Number(text.match(new RegExp(`${name} Time: ([\\d.]+) ms`))?.[1])
          console.log(`${build}/${table} ${part}: planning ${fmt(of('Planning'), 2)} ms, execution ${fmt(of('Execution'), 2)} ms`)
          if (args.includes('--plans')) console.log(text)
        }
        throw Object.assign(new Error('rollback'), {rollback: true})
      }).catch((e) => { if (!e.rollback) throw e })
    }
  }
}
