// The claim's cost under a held horizon, per candidate design, on PostgreSQL (issue 23). While
// one session holds a transaction with an xid, N events are published the way each design
// publishes them; then 1,000 pending events are added and the claim runs under
// EXPLAIN (ANALYZE, BUFFERS) in a transaction rolled back. Buffer counts do not depend on the
// machine's load, so they are the figures; milliseconds are this run's. Then the horizon is
// released, the tables VACUUMed, and the claim measured again. Also checked: (a)'s mark rule
// against a producer that commits late. --quick: N = 2k and 10k.
import {fmt, median} from '../lib.js'
import {onInterrupt} from '../interrupt.js'
import {dropTables, freshTables} from '../outbox.js'
import {DIALECTS, driver} from '../lib-under-test.js'
import {ensurePgDatabase, lib, MYSQL_URL, PG_URL, unreachable} from '../servers.js'
import {mariadbSize} from '../horizon-mariadb.js'
import * as designs from '../horizon-designs.js'

const pg = await driver('pg')
const CHUNK = 1000 // events published per statement while building
const HEAD = 200 // pending events in front of the claim: two batches, a relay keeping up
const LAG = 1000 // (a): events published since the mark last moved, walked by its upkeep
const REPEATS = 5

/** Runs `text` under EXPLAIN (ANALYZE, BUFFERS) in a transaction rolled back: buffers and ms. */
async function explain(client, text, values = [], setup) {
  await client.query('BEGIN')
  try {
    if (setup) await client.query(setup)
    const {rows} = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values)
    const top = rows[0]['QUERY PLAN'][0]
    const scan = pickScan(top.Plan)
    return {buffers: buffersOf(top.Plan), ms: top['Execution Time'], scanBuffers: buffersOf(scan), index: scan?.['Index Name'] ?? scan?.['Node Type']}
  } finally {
    await client.query('ROLLBACK')
  }
}

const buffersOf = (node) => (node ? node['Shared Hit Blocks'] + node['Shared Read Blocks'] : NaN)

/** The plan's first scan of the outbox in the claim's pick (CTE c), or of the whole query. */
function pickScan(plan) {
  const nodes = []
  const walk = (node, inPick) => {
    const pick = inPick || node['Subplan Name'] === 'CTE c'
    if (node['Relation Name'] && pick) nodes.push(node)
    for (const child of node.Plans ?? []) walk(child, pick)
  }
  walk(plan, !JSON.stringify(plan).includes('"CTE c"'))
  return nodes[0]
}

/** Median buffers and ms over REPEATS runs (and the pick's scan: its buffers, the index it read). */
async function measure(client, text, values, setup) {
  const runs = []
  for (let i = 0; i < REPEATS; i++) runs.push(await explain(client, text, values, setup))
  return {buffers: median(runs.map((r) => r.buffers)), ms: median(runs.map((r) => r.ms)), scanBuffers: median(runs.map((r) => r.scanBuffers)), index: [...new Set(runs.map((r) => r.index))].join(', '), runs}
}

/** Publishes n events in chunks, each chunk leased then settled by `settle` (ids as $1). */
async function publish(client, names, n, settle) {
  const firsts = []
  for (let done = 0; done < n; done += CHUNK) {
    const {rows} = await client.query(designs.insertPending(names, Math.min(CHUNK, n - done)))
    firsts.push(rows[0].first)
    await client.query(designs.lease(names), [rows[0].ids])
    const statement = settle(rows[0].ids)
    await client.query(statement.text, statement.params)
  }
  return firsts
}

const compiled = (fragment) => DIALECTS.postgres.render.compile(fragment)

/**
 * The shipped relay's claim from its mark, as the relay runs it: a prepared statement, its mark
 * bound. Custom plan (the first executions) and generic plan (what a prepared statement may
 * settle on after five): the generic one cannot see the mark's value.
 */
async function measureShipped(client, names, mark) {
  const {text, params} = designs.shippedClaim(names, mark)
  await client.query(`PREPARE hz_shipped AS ${text}`)
  try {
    const execute = `EXECUTE hz_shipped(${params.map((p) => (typeof p === 'number' ? String(p) : client.escapeLiteral(String(p)))).join(', ')})`
    return {custom: await measure(client, execute), generic: await measure(client, execute, [], 'SET LOCAL plan_cache_mode = force_generic_plan')}
  } finally {
    await client.query('DEALLOCATE hz_shipped')
  }
}

async function oneSize(admin, db, n) {
  const today = await freshTables(db, 'hz')
  const moved = await freshTables(db, 'hzc')
  await admin.query(`CREATE TABLE ${moved.outbox}_published (LIKE ${moved.outbox})`)
  const hold = new pg.Client({connectionString: PG_URL})
  const cleanUp = async () => {
    await hold.end().catch(() => {})
    await admin.query(`DROP TABLE IF EXISTS ${moved.outbox}_published`).catch(() => {})
    await dropTables(db, today)
    await dropTables(db, moved)
  }
  const unregister = onInterrupt(cleanUp)
  await hold.connect()
  try {
    await hold.query('BEGIN')
    await hold.query('SELECT txid_current()')
    const firsts = await publish(admin, today, n, (ids) => compiled(designs.markToday(today, ids)))
    await publish(admin, moved, n, (ids) => ({text: designs.moveToPublished(moved), params: [ids]}))
    const {rows: head} = await admin.query(designs.insertPending(today, HEAD))
    await admin.query(designs.insertPending(moved, HEAD))
    await admin.query(`ANALYZE ${today.outbox}; ANALYZE ${moved.outbox}`)
    const mark = head[0].first
    const oldMark = firsts[Math.max(0, firsts.length - LAG / CHUNK)]
    const bound = (await admin.query(designs.writersBound(today))).rows[0].bound
    const shippedMark = await designs.shippedMark(admin, today, oldMark)
    const held = {
      today: await measure(admin, designs.todaysClaim(today)),
      fromMark: await measure(admin, designs.claimFromMark(today, mark)),
      markUpkeep: await measure(admin, designs.nextMark(today, oldMark, bound)),
      writersBound: await measure(admin, designs.writersBound(today)),
      moved: await measure(admin, designs.todaysClaim(moved)),
      shipped: await measureShipped(admin, today, shippedMark),
    }
    const {rows: dead} = await admin.query('SELECT relname, n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relname = ANY($1)', [[today.outbox, moved.outbox]])
    await hold.query('ROLLBACK')
    await admin.query(`VACUUM ${today.outbox}`)
    await admin.query(`VACUUM ${moved.outbox}`)
    const vacuumed = {today: await measure(admin, designs.todaysClaim(today)), moved: await measure(admin, designs.todaysClaim(moved))}
    // (b) without the partial index: the same claim on the plain created_at index, horizon released
    await admin.query(`DROP INDEX ${today.outbox}_pending_idx`)
    const noPartial = await measure(admin, designs.todaysClaim(today))
    return {n, held, vacuumed, noPartial, deadTuples: Object.fromEntries(dead.map((r) => [r.relname === today.outbox ? 'today' : 'moved', r.dead]))}
  } finally {
    unregister()
    await cleanUp()
  }
}

/**
 * (a)'s rule against a late commit: a producer inserts an event and keeps its transaction open
 * while later events commit. The naive mark (oldest visible pending) passes the late event;
 * the writers rule must not, and the claim from its mark must return the event once committed.
 */
async function lateCommit(admin, db) {
  const names = await freshTables(db, 'hzl')
  const late = new pg.Client({connectionString: PG_URL})
  const cleanUp = async () => (await late.end().catch(() => {}), await dropTables(db, names))
  const unregister = onInterrupt(cleanUp)
  await late.connect()
  try {
    await late.query('BEGIN')
    const {rows} = await late.query(`INSERT INTO ${names.outbox} (id, event_type, aggregate_id, payload) VALUES (gen_random_uuid(), 'late', 'late', '{}') RETURNING id, created_at::text AS created`)
    const created = rows[0].created
    await admin.query(designs.insertPending(names, 100))
    const naive = (await admin.query(designs.naiveMark(names))).rows[0].mark
    const bound = (await admin.query(designs.writersBound(names))).rows[0].bound
    const mark = (await admin.query(designs.nextMark(names, '-infinity', bound))).rows[0].mark
    const order = (await admin.query('SELECT $1::timestamptz > $3::timestamptz AS naive_skips, $2::timestamptz <= $3::timestamptz AS mark_keeps', [naive, mark, created])).rows[0]
    await late.query('COMMIT')
    await admin.query('BEGIN')
    const claimed = (await admin.query(designs.claimFromMark(names, mark).replace('LIMIT 100', 'LIMIT 1000'))).rows.map((r) => r.id)
    await admin.query('ROLLBACK')
    return {lateCreatedAt: created, naiveMark: naive, naiveSkips: order.naive_skips, mark, markKeeps: order.mark_keeps, claimedAfterCommit: claimed.includes(rows[0].id)}
  } finally {
    unregister()
    await cleanUp()
  }
}

/** The same sizes on MariaDB, today's pick and from the mark; {skipped} when the server is down. */
async function onMariadb(sizes, log) {
  const down = await unreachable(MYSQL_URL)
  if (down) return {skipped: down}
  const db = await lib.openDb(MYSQL_URL, {poolSize: 1})
  try {
    const results = []
    for (const n of sizes) {
      const r = await mariadbSize(db, MYSQL_URL, n, {chunk: CHUNK, head: HEAD, repeats: REPEATS})
      results.push(r)
      log(`MariaDB N ${n}: today ${r.held.today.pages} pages, from the mark ${r.held.fromMark.pages}; purged ${r.released.today.pages}`)
    }
    return {results}
  } finally {
    await db.close()
  }
}

export default async function horizon({quick, log}) {
  await ensurePgDatabase()
  const down = await unreachable(PG_URL)
  if (down) return {title: 'Relay under a held horizon (PostgreSQL)', markdown: `PostgreSQL skipped: ${down}`, raw: {skipped: down}}
  const db = await lib.openDb(PG_URL, {poolSize: 1})
  const admin = new pg.Client({connectionString: PG_URL})
  await admin.connect()
  try {
    const sizes = quick ? [2000, 10_000] : [10_000, 50_000, 100_000]
    const results = []
    for (const n of sizes) {
      const r = await oneSize(admin, db, n)
      results.push(r)
      log(`N ${n}: today ${r.held.today.buffers} buffers, from the mark ${r.held.fromMark.buffers} (shipped ${r.held.shipped.custom.buffers}, generic plan ${r.held.shipped.generic.buffers}), delete+move ${r.held.moved.buffers}; vacuumed ${r.vacuumed.today.buffers}`)
    }
    const late = await lateCommit(admin, db)
    log(`late commit: naive mark skips it ${late.naiveSkips}, writers rule keeps it ${late.markKeeps}, claimed ${late.claimedAfterCommit}`)
    const mariadb = await onMariadb(sizes, log)
    const {horizonMarkdown} = await import('../horizon-report.js')
    return {title: 'Relay under a held horizon (claim cost per design)', markdown: horizonMarkdown({quick, results, late, mariadb, head: HEAD, lag: LAG, chunk: CHUNK, repeats: REPEATS}), raw: {results, late, mariadb}}
  } finally {
    await admin.end()
    await db.close()
  }
}
