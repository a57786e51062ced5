#!/usr/bin/env node
// Where a partitioned outbox's `status` spends its time (issue 25), PostgreSQL or MariaDB
// (--dialect=mysql). The retention
// suite's two tables (--days x --rows published events, 2000 pending of today; one with a
// partition a day, one unpartitioned), kept between runs: --seed makes them, --drop drops them.
// Per round, readStatus on each table with each build (this tree's; OUTBOX_BENCH_BEFORE=<dist>:
// another build's too, e.g. main's), the order rotating; every statement timed from the client
// (round trips included); then --explain: EXPLAIN (ANALYZE, SUMMARY) of each statement
// (MariaDB: per statement its server stages from SHOW PROFILE, its Handler_% and Opened_%
// status deltas and, from ANALYZE FORMAT=JSON, the partitions each table access read).
//   node bench/status-profile.js --seed --days=30 --rows=100000
//   OUTBOX_BENCH_BEFORE=/work/main/dist node bench/status-profile.js --rounds=15 --explain [--prepared] [--window-ms=600000]
//   node bench/status-profile.js --dialect=mysql --published --rounds=8 --evict [--explain]
// --published: the 2000 pending events published now first (as after the partitions suites' drains)
import {loadavg} from 'node:os'
import {fmt, median} from './lib.js'
import {lib} from './lib-under-test.js'
import {args, builds, DIALECT, option, tables, URL} from './profile-setup.js'
import {PENDING, SEED} from './suites/retention.js'

const DAY = 86_400_000

/** what a status statement reads, from its text */
function label(text) {
  if (/pg_inherits|relkind|information_schema/i.test(text)) return 'catalog'
  if (/ROW_NUMBER\(\) OVER \((PARTITION BY event_type )?ORDER BY (EXTRACT|\(TIMESTAMPDIFF)/.test(text)) return 'window'
  if (/failed_at IS NOT NULL/.test(text)) return 'failed'
  if (/SUM\(CASE/.test(text)) return 'pending'
  if (/ORDER BY [`"]?created_at/i.test(text) || /rn[`"]? = /.test(text)) return 'oldest'
  if (/^\s*SELECT (now\(\)|UTC_TIMESTAMP)/i.test(text)) return 'now'
  return text.slice(0, 40).replace(/\s+/g, ' ')
}

/** the Db, its transactions and queries timed statement by statement into sink.times (one wrapper per Db: status keeps its partition layout per Db) */
function timed(db, sink) {
  const wrap = (q) => ({
    ...q,
    async query(statement, options) {
      const started = performance.now()
      try {
        return await q.query(statement, options)
      } finally {
        const text = db.dialect.render.compile(statement).text
        const part = label(text)
        sink.seen.set(part, statement)
        sink.times.push([part, performance.now() - started])
      }
    },
  })
  return {
    ...wrap(db),
    async transaction(fn, options) {
      const started = performance.now()
      try {
        return await db.transaction((tx, driver) => fn(wrap(tx), driver), options)
      } finally {
        sink.times.push(['transaction', performance.now() - started])
      }
    },
  }
}

async function seed(db) {
  const {sql, raw, initPlan, ensurePartitions} = lib
  const days = option('days', 30)
  const perDay = option('rows', 100_000)
  const [{now: read}] = await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`)
  const clock = db.dialect.render.parseTime(read)
  const time = db.dialect.render.timeParam
  const today = Date.UTC(clock.getUTCFullYear(), clock.getUTCMonth(), clock.getUTCDate())
  const start = new Date(today - days * DAY)
  const table = (names) => raw(db.dialect.render.table(names, 'outbox'))
  for (const [names, extra] of [[tables.plain, {}], [tables.parted, {partitionBy: 'day'}]]) {
    await db.execute(sql`DROP TABLE IF EXISTS ${table(names)}`)
    for (const s of initPlan(db.dialect, names, {inbox: false, archive: false, ...extra}, start).filter((s) => !s.repairOnly)) await db.execute(sql`${raw(s.sql.replace(/;\s*$/, ''))}`)
  }
  await ensurePartitions(db, tables.parted, {aheadMs: 7 * DAY})
  const started = performance.now()
  await Promise.all(Object.values(tables).map((names) => db.execute(SEED[DIALECT](table(names), time(start), days * perDay, perDay))))
  for (const names of Object.values(tables)) await db.execute(PENDING[DIALECT](table(names), time(new Date(today))))
  for (const names of Object.values(tables)) await db.execute(db.dialect.verify.analyze(names))
  console.log(`seeded ${days} x ${perDay} (+2000 pending) into both in ${fmt((performance.now() - started) / 1000, 0)} s`)
}

const dbs = {}
for (const [build, l] of Object.entries(builds)) dbs[build] = await l.openDb(URL, {poolSize: 2})
/** --evict: a scan of the unpartitioned table's rows (far past a 128 MB buffer pool), so status reads cold pages */
const evict = async () => {
  if (args.includes('--evict')) await dbs.after.query(lib.sql`SELECT COUNT(*) AS n FROM ${lib.raw(dbs.after.dialect.render.table(tables.plain, 'outbox'))} WHERE payload IS NOT NULL`)
}
try {
  if (args.includes('--drop')) {
    for (const names of Object.values(tables)) await dbs.after.execute(lib.sql`DROP TABLE IF EXISTS ${lib.raw(dbs.after.dialect.render.table(names, 'outbox'))}`)
    process.exit(0)
  }
  if (args.includes('--seed')) await seed(dbs.after)
  if (args.includes('--published')) {
    const {sql, raw} = lib
    const now = raw(dbs.after.dialect.render.now)
    for (const names of Object.values(tables)) {
      await dbs.after.execute(sql`UPDATE ${raw(dbs.after.dialect.render.table(names, 'outbox'))} SET published_at = ${now}, lease_owner = NULL, lease_until = NULL, attempts = 1 WHERE event_type = 'bench.pending'`)
    }
  }
  const rounds = option('rounds', 10)
  const runs = [] // {build, table, total, parts}
  const statements = {}
  const load = [loadavg()[0]]
  const sink = {times: [], seen: new Map()}
  const wrapped = Object.fromEntries(Object.entries(dbs).map(([build, db]) => [build, timed(db, sink)]))
  const combos = Object.keys(builds).flatMap((build) => ['plain', 'parted'].map((table) => [build, table]))
  for (let i = 0; i < rounds + 1; i++) {
    for (let j = 0; j < combos.length; j++) {
      const [build, table] = combos[(i + j) % combos.length]
      const times = (sink.times = [])
      const seen = (sink.seen = new Map())
      await evict()
      const started = performance.now()
      await builds[build].readStatus(wrapped[build], tables[table], {windowMs: option('window-ms', 3_600_000)})
      const total = performance.now() - started
      if (i > 0) runs.push({build, table, total, times}) // round 0 warms each connection up
      statements[`${build}/${table}`] = seen
    }
  }
  load.push(loadavg()[0])
  console.log(`load ${fmt(load[0])} -> ${fmt(load[1])}; ${rounds} rounds; median ms (client side, round trips included)`)
  for (const build of Object.keys(builds)) {
    for (const table of ['plain', 'parted']) {
      const mine = runs.filter((r) => r.build === build && r.table === table)
      const parts = {}
      for (const r of mine) for (const [part, ms] of r.times) (parts[part] ??= []).push(ms)
      console.log(`${build}/${table}: total ${fmt(median(mine.map((r) => r.total)), 2)}  ${Object.entries(parts).map(([p, v]) => `${p} ${fmt(median(v), 2)}`).join('  ')}`)
    }
    const ratios = []
    const plain = runs.filter((r) => r.build === build && r.table === 'plain')
    const parted = runs.filter((r) => r.build === build && r.table === 'parted')
    for (let k = 0; k < plain.length; k++) ratios.push(parted[k].total / plain[k].total)
    console.log(`${build}: partitioned / unpartitioned per round, median ${fmt(median(ratios), 2)}x (${fmt(Math.min(...ratios), 2)}-${fmt(Math.max(...ratios), 2)})`)
  }
  if (args.includes('--explain')) await (DIALECT === 'mysql' ? explainMariaDb(statements) : explain(statements))
  if (args.includes('--prepared')) await prepared(statements)
} finally {
  for (const db of Object.values(dbs)) await db.close()
}

/** EXPLAIN (ANALYZE, SUMMARY) of each statement the last read ran, three times, in one snapshot; planning / execution ms */
async function explain(statements) {
  for (const [key, seen] of Object.entries(statements)) {
    // the other build's statements are its own Sql class: EXPLAIN through its own Db
    const db = dbs[key.split('/')[0]]
    const {sql} = builds[key.split('/')[0]]
    await db.transaction(async (tx) => {
      for (const [part, statement] of seen) {
        const figures = []
        for (let i = 0; i < 3; i++) {
          const rows = await tx.query(sql`EXPLAIN (ANALYZE, SUMMARY) ${statement}`)
          const text = rows.map((r) => r['QUERY PLAN']).join('\n')
          const of = (name) => Number(text.match(new RegExp(`${name} Time: ([\\d.]+) ms`))?.[1])
          figures.push([of('Planning'), of('Execution')])
          if (i === 2 && args.includes('--plans')) console.log(`-- ${key} ${part}\n${text}`)
        }
        console.log(`${key} ${part}: planning ${figures.map((f) => fmt(f[0], 2)).join('/')} ms, execution ${figures.map((f) => fmt(f[1], 2)).join('/')} ms`)
      }
    }, {snapshot: true})
  }
}

/**
 * As the reads run (prepared, planned by the server's plan cache): each statement PREPAREd in one
 * session, EXECUTEd 6 times (past the plan cache's 5 custom plans), then EXPLAIN (ANALYZE,
 * SUMMARY) EXECUTE three times: planning there is a cached plan's checks or a custom plan's planning.
 */
async function prepared(statements) {
  const {sql, raw} = builds.after
  for (const [key, seen] of Object.entries(statements)) {
    if (!key.startsWith('after/')) continue
    await dbs.after.transaction(async (tx) => {
      let n = 0
      for (const [part, statement] of seen) {
        const text = dbs.after.dialect.render.compile(statement).text
        const name = `sprof_${n++}`
        await tx.query(sql`${raw(`PREPARE ${name} AS ${text}`)}`)
        const execute = statement.values.length ? sql`EXECUTE ${raw(name)}(${raw(statement.values.map((v) => (typeof v === 'number' ? v : `'${String(v).replaceAll("'", "''")}'`)).join(', '))})` : sql`EXECUTE ${raw(name)}`
        for (let i = 0; i < 6; i++) await tx.query(execute)
        const figures = []
        for (let i = 0; i < 3; i++) {
          const text = (await tx.query(sql`EXPLAIN (ANALYZE, SUMMARY) ${execute}`)).map((r) => r['QUERY PLAN']).join('\n')
          const of = (what) => Number(text.match(new RegExp(`${what} Time: ([\\d.]+) ms`))?.[1])
          figures.push([of('Planning'), of('Execution')])
        }
        await tx.query(sql`${raw(`DEALLOCATE ${name}`)}`)
        console.log(`prepared ${key} ${part}: planning ${figures.map((f) => fmt(f[0], 2)).join('/')} ms, execution ${figures.map((f) => fmt(f[1], 2)).join('/')} ms`)
      }
    }, {snapshot: true, first: dbs.after.dialect.batches.snapshotFirst}) // as readStatus plans them
  }
}

/**
 * MariaDB: each statement the last read ran, in one snapshot: client ms (3 runs), the server's
 * stages over those runs (SHOW PROFILE, the slowest 4, ms), the Handler_% and Opened_% status
 * it moved (one run, less what SHOW STATUS moves itself), and from ANALYZE FORMAT=JSON each
 * table access: type, index, partitions read, rows, pages accessed and read from disk.
 */
async function explainMariaDb(statements) {
  for (const [key, seen] of Object.entries(statements)) {
    const build = key.split('/')[0]
    const {sql} = builds[build]
    await dbs[build].transaction(async (tx) => {
      const counters = async () => Object.fromEntries((await tx.query(sql`SHOW SESSION STATUS WHERE Variable_name LIKE 'Handler%' OR Variable_name LIKE 'Opened%'`)).map((r) => [r.Variable_name, Number(r.Value)]))
      const moved = (a, b) => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - a[k]]))
      const own = moved(await counters(), await counters())
      await tx.query(sql`SET profiling = 1`)
      for (const [part, statement] of seen) {
        const ms = []
        const stages = {}
        for (let i = 0; i < 3; i++) {
          const started = performance.now()
          await tx.query(statement)
          ms.push(performance.now() - started)
          for (const r of await tx.query(sql`SHOW PROFILE`)) stages[r.Status] = (stages[r.Status] ?? 0) + Number(r.Duration) * 1000
        }
        const before = await counters()
        await tx.query(statement)
        const delta = moved(before, await counters())
        const counts = Object.entries(delta).map(([k, v]) => [k.replace('Handler_', ''), v - own[k]]).filter(([, v]) => v > 0)
        await evict()
        const [row] = await tx.query(sql`ANALYZE FORMAT=JSON ${statement}`)
        const accesses = []
        JSON.parse(String(Object.values(row)[0]), (_k, v) => {
          const pages = v?.r_engine_stats ? ` pages ${v.r_engine_stats.pages_accessed ?? 0} read ${v.r_engine_stats.pages_read_count ?? 0} (${fmt(v.r_engine_stats.pages_read_time_ms ?? 0, 2)} ms)` : ''
          if (v?.table_name && v.access_type) accesses.push(`${v.table_name} ${v.access_type}${v.key ? ` ${v.key}` : ''} partitions=${v.partitions?.length ?? '-'} r_rows=${v.r_rows} r_loops=${v.r_loops}${pages}`)
          return v
        })
        const top = Object.entries(stages).sort((a, b) => b[1] - a[1]).slice(0, 4)
        console.log(`${key} ${part}: ${ms.map((m) => fmt(m, 2)).join('/')} ms; stages (3 runs) ${top.map(([s, d]) => `${s} ${fmt(d, 2)}`).join(', ')}; ${counts.map(([k, v]) => `${k} ${v}`).join(' ')}; ${accesses.join(' | ')}`)
      }
      await tx.query(sql`SET profiling = 0`)
    }, {snapshot: true})
  }
}
