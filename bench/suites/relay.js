// Relay throughput (events/s, batch 100, no-op publisher) on each dialect, against a raw loop
// that runs the SAME claim and mark statements (the dialect's, from the library) directly on the
// driver and nothing else. Runs are interleaved pair by pair, alternating which goes first,
// and each run starts from a freshly seeded table. On PostgreSQL also 1, 2 and 4 relay instances.
// --quick: 3 pairs instead of 21 and 1000 events (SQLite 3000) instead of 3000-10000 per run.
import {randomUUID} from 'node:crypto'
import {loadavg} from 'node:os'
import {fmt, median, percentile, summary} from '../lib.js'
import {sqliteUrl} from '../servers.js'
import {applyInit, DIALECTS, dialectOf, driver, join, MYSQL_READ_COMMITTED, openDb, raw as rawSql, Relay, sql} from '../lib-under-test.js'

const URLS = {
  postgres: process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  mysql: process.env.OUTBOX_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
  sqlite: sqliteUrl(), // removed when the process exits
}
const BATCH = 100
const TARGET = 0.9
const OWNER = 'bench-relay'

const noop = {name: 'noop', publish: async (events) => events.map(() => ({ok: true})), close: async () => {}}

/** Fresh table contents: `count` pending events, created_at increasing. */
export async function seed(db, names, count) {
  const d = dialectOf(db)
  const table = rawSql(d.render.table(names, 'outbox'))
  await db.execute(d.name === 'sqlite' ? sql`DELETE FROM ${table}` : sql`TRUNCATE TABLE ${table}`)
  if (d.name === 'postgres') {
    await db.execute(sql`INSERT INTO ${table} (id, event_type, aggregate_id, payload, created_at)
SELECT gen_random_uuid(), 'order.created', 'order-' || i, jsonb_build_object('n', i), now() - interval '1 hour' + i * interval '1 millisecond'
FROM generate_series(1, ${count}) AS i`)
    await db.execute(sql`ANALYZE ${table}`)
    return
  }
  const base = Date.now() - 3_600_000
  for (let start = 0; start < count; start += 500) {
    await db.transaction(async (tx) => {
      const rows = []
      for (let i = start; i < Math.min(count, start + 500); i++) {
        rows.push(sql`(${randomUUID()}, 'order.created', ${`order-${i}`}, ${JSON.stringify({n: i})}, ${d.render.timeParam(new Date(base + i))})`)
      }
      await tx.execute(sql`INSERT INTO ${table} (id, event_type, aggregate_id, payload, created_at) VALUES ${join(rows)}`)
    })
  }
  if (d.name === 'mysql') await db.execute(sql`ANALYZE TABLE ${table}`)
}

/** Lets the server's background work from seeding (WAL flush, autoanalyze) settle before a timed run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 250))

/**
 * Whether this build's claim carries the previous batch's mark (ClaimOptions.mark, one commit
 * per batch); a build before it marks in a statement of its own, and so does its raw loop.
 */
function carriesMark(d, names, options) {
  const text = (plan) => JSON.stringify([plan.statement, plan.lock, plan.mark])
  return text(d.relay.claim(names, {...options, mark: {ids: [randomUUID()]}})) !== text(d.relay.claim(names, options))
}

/**
 * Whether this build's statements bound the mark (and MySQL's UPDATE) by the batch's created_at
 * span (CarriedMark.createdAt): then the raw loop sends that span too, as the relay does.
 */
function boundsBySpan(d, names, options) {
  const ids = [randomUUID()]
  const createdAt = {from: new Date(0), to: new Date(1)}
  const text = (span) => {
    const plan = d.relay.claim(names, {...options, mark: {ids, createdAt: span}})
    return JSON.stringify([plan.mark, plan.update?.(ids, span), d.relay.markPublished(names, ids, span)].map((s) => s && d.render.compile(s).text))
  }
  return text(createdAt) !== text(undefined)
}

/** What the relay carries for a batch (src/relay/claim.ts carriedMark): its ids and, where the statements use it, its created_at span a millisecond wider each side. */
function markOf(rows, spans) {
  const ids = rows.map((r) => r.id)
  if (!spans) return {ids}
  const times = rows.map((r) => new Date(r.created_at).getTime())
  return {ids, createdAt: {from: new Date(Math.min(...times) - 1), to: new Date(Math.max(...times) + 1)}}
}

/**
 * The low-water mark's statements, where the relay claims from one by default (ClaimMarkPart.bound
 * 'writers': PostgreSQL): walked from `none` before the first claim, then moved every
 * MARK_MOVE_MS, as the relay's ClaimMark does during a drain. Undefined where the relay claims
 * from the start of the index (MariaDB's default, SQLite, builds before the mark).
 */
function markMover(d, names, query) {
  const part = d.relay.claimMark
  if (part?.bound !== 'writers') return undefined
  let value = part.none
  let movedAt = -Infinity
  return async () => {
    const now = performance.now()
    if (now - movedAt >= MARK_MOVE_MS) {
      movedAt = now
      // two statements, in this order, as the relay sends them (src/relay/claim-mark.ts refresh)
      const [{bound}] = await query(part.writersBound(names, 0))
      const [{mark}] = await query(part.next(names, value, bound))
      value = mark
    }
    return value
  }
}
/** src/relay/claim-mark.ts MARK_REFRESH_MAX_MS: how often the relay moves its mark while claims run */
const MARK_MOVE_MS = 50

/** The raw loop: the dialect's claim and mark statements on the bare driver, as the relay runs them. */
export async function rawLoop(dialectName, url, names) {
  const d = DIALECTS[dialectName]
  const options = {batch: BATCH, leaseMs: 30_000, owner: OWNER}
  const plan = d.relay.claim(names, options)
  const carries = carriesMark(d, names, options)
  const spans = boundsBySpan(d, names, options)
  /** the claim plan from the low-water mark `from` (if the relay keeps one) carrying `mark` (the previous batch's) */
  const carrying = (mark, from) => {
    const carried = carries && mark.ids.length > 0
    return carried || from !== undefined ? d.relay.claim(names, {...options, ...(from === undefined ? {} : {from}), ...(carried ? {mark} : {})}) : plan
  }
  let previous = {ids: []}
  let total = 0
  if (dialectName === 'postgres') {
    const pg = await driver('pg')
    const client = new pg.Client({connectionString: url})
    await client.connect()
    const lowWater = markMover(d, names, async (statement) => {
      const compiled = d.render.compile(statement)
      return (await client.query(compiled.text, compiled.params)).rows
    })
    const started = performance.now()
    for (;;) {
      const claim = d.render.compile(carrying(previous, await lowWater?.()).statement)
      const {rows} = await client.query({name: previous.ids.length && carries ? 'raw_claim_mark' : 'raw_claim', text: claim.text, values: claim.params})
      if (rows.length === 0) break
      previous = markOf(rows, spans)
      if (!carries) {
        const mark = d.render.compile(d.relay.markPublished(names, previous.ids, previous.createdAt))
        await client.query({name: 'raw_mark', text: mark.text, values: mark.params})
      }
      total += rows.length
    }
    const ms = performance.now() - started
    await client.end()
    return {total, ms}
  }
  if (dialectName === 'mysql') {
    const mysql2 = await driver('mysql2/promise')
    const u = new URL(url)
    const conn = await mysql2.createConnection({host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database: u.pathname.slice(1), timezone: 'Z'})
    await conn.query(MYSQL_READ_COMMITTED)
    await conn.query("SET time_zone = '+00:00'")
    const lock = d.render.compile(plan.lock)
    const started = performance.now()
    for (;;) {
      await conn.query('START TRANSACTION')
      const carried = carrying(previous).mark
      if (carried) {
        const mark = d.render.compile(carried)
        await conn.query(mark.text, mark.params)
      }
      const [rows] = await conn.execute(lock.text, lock.params)
      if (rows.length === 0) {
        await conn.query('COMMIT')
        break
      }
      previous = markOf(rows, spans)
      const update = d.render.compile(plan.update(previous.ids, previous.createdAt))
      await conn.query(update.text, update.params)
      await conn.query('COMMIT')
      if (!carries) {
        const mark = d.render.compile(d.relay.markPublished(names, previous.ids, previous.createdAt))
        await conn.query(mark.text, mark.params)
      }
      total += rows.length
    }
    const ms = performance.now() - started
    await conn.end()
    return {total, ms}
  }
  const Database = await driver('better-sqlite3')
  const database = new Database(url.slice('sqlite:'.length), {timeout: 5000})
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  const claim = d.render.compile(plan.statement)
  const claimStatement = database.prepare(claim.text)
  const begin = database.prepare('BEGIN IMMEDIATE')
  const commit = database.prepare('COMMIT')
  // prepared once per text, as the relay's statement cache does (dialects/sqlite/statements.ts)
  const statements = new Map()
  const prepared = (text) => statements.get(text) ?? statements.set(text, database.prepare(text)).get(text)
  const started = performance.now()
  for (;;) {
    const carried = carrying(previous).mark
    let rows
    if (carried) {
      // the relay's claim carrying the mark: both statements in one transaction
      const mark = d.render.compile(carried)
      begin.run()
      prepared(mark.text).run(...mark.params)
      rows = claimStatement.all(...claim.params)
      commit.run()
    } else {
      rows = claimStatement.all(...claim.params)
    }
    if (rows.length === 0) break
    previous = markOf(rows, spans)
    if (!carries) {
      const mark = d.render.compile(d.relay.markPublished(names, previous.ids, previous.createdAt))
      prepared(mark.text).run(...mark.params)
    }
    total += rows.length
  }
  const ms = performance.now() - started
  database.close()
  return {total, ms}
}

export async function relayRun(url, names, instances) {
  const dbs = await Promise.all(Array.from({length: instances}, () => openDb(url, {poolSize: 2})))
  // connected before the clock starts, as the raw loop's client is: a drain, not a relay's start
  await Promise.all(dbs.map((db) => Promise.all([db.query(sql`SELECT 1`), db.query(sql`SELECT 1`)])))
  const started = performance.now()
  // maxBatch = batch: the raw loop claims BATCH at a time, so the relay must too for relay/raw
  // to compare the same statements (claims that grow during a backlog are measured in peers)
  const results = await Promise.all(dbs.map((db, i) => new Relay({db, publisher: noop, tables: names, batch: BATCH, maxBatch: BATCH, owner: `${OWNER}-${i}`}).drainOnce()))
  const ms = performance.now() - started
  await Promise.all(dbs.map((db) => db.close()))
  return {total: results.reduce((n, r) => n + r.published, 0), ms}
}

const rate = ({total, ms}) => (total / ms) * 1000

export default async function relay({quick, log}) {
  // Many short pairs rather than a few long runs: this machine is shared, and the median of
  // per-pair ratios shrugs off the moments when someone else's tests take the CPU.
  const runs = quick ? 3 : 21
  const loadBefore = loadavg()[0]
  const counts = {postgres: quick ? 1000 : 4000, mysql: quick ? 1000 : 3000, sqlite: quick ? 3000 : 10000}
  const raw = {}
  const rows = []
  for (const dialect of ['postgres', 'mysql', 'sqlite']) {
    const url = URLS[dialect]
    let db
    try {
      db = await openDb(url)
    } catch (error) {
      log(`${dialect}: skipped (${error.message})`)
      rows.push(`| ${dialect} | skipped: server unreachable | | | | | |`)
      continue
    }
    const names = {outbox: `bench_relay_${randomUUID().slice(0, 8)}`, inbox: 'bench_relay_in', archive: 'bench_relay_ar'}
    await applyInit(db, names, {inbox: false, archive: false})
    const n = counts[dialect]
    const r = {raw: [], relay: [], ratio: []}
    // warm-up: plans, prepared statements, file cache
    await seed(db, names, Math.min(n, 2000))
    await rawLoop(dialect, url, names)
    await seed(db, names, Math.min(n, 2000))
    await relayRun(url, names, 1)
    for (let i = 0; i < runs; i++) {
      const order = i % 2 ? ['relay', 'raw'] : ['raw', 'relay']
      const pair = {}
      for (const which of order) {
        await seed(db, names, n)
        await settle()
        const result = which === 'raw' ? await rawLoop(dialect, url, names) : await relayRun(url, names, 1)
        if (result.total !== n) throw new Error(`${dialect} ${which}: delivered ${result.total} of ${n}`)
        pair[which] = rate(result)
      }
      r.raw.push(pair.raw)
      r.relay.push(pair.relay)
      r.ratio.push(pair.relay / pair.raw)
      log(`${dialect} run ${i + 1}: raw ${fmt(pair.raw, 0)}/s relay ${fmt(pair.relay, 0)}/s (${fmt((pair.relay / pair.raw) * 100, 0)}%)`)
    }
    if (dialect === 'postgres') {
      r.one = []
      r.two = []
      r.four = []
      r.scale2 = []
      r.scale = []
      for (let i = 0; i < runs; i++) {
        // 1, 2 and 4 instances, order rotated per run so no count always goes first.
        const order = [1, 2, 4].map((_, j, a) => a[(i + j) % a.length])
        const pair = {}
        for (const k of order) {
          await seed(db, names, n)
          await settle()
          const result = await relayRun(url, names, k)
          if (result.total !== n) throw new Error(`postgres ${k} relays: delivered ${result.total} of ${n}`)
          pair[k] = rate(result)
        }
        r.one.push(pair[1])
        r.two.push(pair[2])
        r.four.push(pair[4])
        r.scale2.push(pair[2] / pair[1])
        r.scale.push(pair[4] / pair[1])
        log(`postgres scale run ${i + 1}: 1 relay ${fmt(pair[1], 0)}/s, 2 relays ${fmt(pair[2], 0)}/s, 4 relays ${fmt(pair[4], 0)}/s (x${fmt(pair[2] / pair[1], 2)}, x${fmt(pair[4] / pair[1], 2)})`)
      }
    }
    await db.execute(sql`DROP TABLE IF EXISTS ${rawSql(dialectOf(db).render.table(names, 'outbox'))}`)
    await db.close()
    const quartiles = {p25: percentile(r.ratio, 25), p75: percentile(r.ratio, 75)}
    raw[dialect] = {events: n, raw: summary(r.raw), relay: summary(r.relay), ratio: {...summary(r.ratio), ...quartiles, pairs: r.ratio}, ...(r.scale ? {one: summary(r.one), two: summary(r.two), four: summary(r.four), scale2: summary(r.scale2), scale: summary(r.scale)} : {})}
    const ratio = raw[dialect].ratio
    rows.push(
      `| ${dialect} | ${fmt(median(r.raw), 0)} | ${fmt(median(r.relay), 0)} | **${fmt(ratio.median * 100, 0)}%** | ${fmt(ratio.p25 * 100, 0)}–${fmt(ratio.p75 * 100, 0)}% | ${fmt(ratio.min * 100, 0)}–${fmt(ratio.max * 100, 0)}% | ${ratio.median >= TARGET ? 'met' : 'MISSED'} |`,
    )
  }
  const pg = raw.postgres
  const scaleText = pg
    ? `| 1 relay | ${fmt(pg.one.median, 0)} events/s (${fmt(pg.one.min, 0)}–${fmt(pg.one.max, 0)}) |
| 2 relays | ${fmt(pg.two.median, 0)} events/s (${fmt(pg.two.min, 0)}–${fmt(pg.two.max, 0)}) |
| 4 relays | ${fmt(pg.four.median, 0)} events/s (${fmt(pg.four.min, 0)}–${fmt(pg.four.max, 0)}) |
| 2 / 1, per run | **x${fmt(pg.scale2.median, 2)}** (${fmt(pg.scale2.min, 2)}–${fmt(pg.scale2.max, 2)}) |
| 4 / 1, per run | **x${fmt(pg.scale.median, 2)}** (${fmt(pg.scale.min, 2)}–${fmt(pg.scale.max, 2)}): ${pg.scale.median >= 1 ? 'does not fall (target met)' : 'FALLS (target missed)'} |`
    : '| skipped | PostgreSQL unreachable |'
  const load = `${fmt(loadBefore, 1)} at the start, ${fmt(loadavg()[0], 1)} at the end`
  const markdown = `${quick ? `**Quick run**: ${runs} pairs instead of 21, smaller tables.\n\n` : ''}Relay throughput with a no-op publisher, batch ${BATCH}, each run draining a freshly seeded
table (${counts.postgres} events on PostgreSQL, ${counts.sqlite} on SQLite, ${counts.mysql} on MariaDB). The baseline is a raw
loop on the bare driver (pg Client / mysql2 connection / better-sqlite3) running the same
claim and mark statements, their text taken from the dialect (each claim carrying the
previous batch's mark, in its statement or its transaction, bounded by the batch's created_at
span where the dialect's statements are, each text prepared once; on PostgreSQL from the low-water
mark, walked before the first claim and moved every ${MARK_MOVE_MS} ms with its two statements; as the relay
runs them), with nothing else: no pool, no result mapping, no sorting (SQLite's RETURNING is unordered:
the relay sorts), no settle logic. Both connect before the clock starts. ${runs} interleaved pairs per dialect,
alternating which runs first; the ratio is taken per pair, median (min–max). Target: at
least ${TARGET * 100}%. Load average (2 cores, shared): ${load}; single runs swing widely, hence
many short pairs, and the spread is shown: on this machine one pair can read 40% or 170%
while the medians sit near parity. Where the relay's own time goes (SQLite, MariaDB): see
"The relay against the raw loop: where the gap was" above.

| dialect | raw loop (events/s) | relay (events/s) | relay / raw, median of pairs | middle half of pairs | all pairs | target |
|---|---|---|---|---|---|---|
${rows.join('\n')}

PostgreSQL, 1, 2 and 4 relay instances (each its own pool, in one Node process, SKIP LOCKED
sharing the table), same seeded table per run, ${runs} interleaved runs (order rotated):

| | |
|---|---|
${scaleText}
`
  return {title: 'Relay throughput', markdown, raw}
}

/** The figures `npm run bench -- compare` puts side by side: relay / raw per dialect, and PostgreSQL's scaling. */
export function headline(raw) {
  const figures = Object.entries(raw).map(([dialect, r]) => ({
    key: `${dialect} relay/raw`,
    label: `${dialect}: relay / raw loop (${r.ratio.runs} pairs, ${r.events} events each, median)`,
    value: r.ratio.median,
    better: 'higher',
  }))
  if (raw.postgres?.scale) {
    figures.push(
      {key: 'postgres 2/1 relays', label: 'postgres: 2 relays / 1 (median of runs)', value: raw.postgres.scale2.median, better: 'higher'},
      {key: 'postgres 4/1 relays', label: 'postgres: 4 relays / 1 (median of runs)', value: raw.postgres.scale.median, better: 'higher'},
    )
  }
  return figures
}
