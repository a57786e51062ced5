// The pressure suite's database side: a fixed-rate producer (business transactions with
// writeEvent, open loop), the sessions that hold the horizon back (one idle transaction, or
// REPEATABLE READ readers scanning the outbox), and the outbox's gauges (dead tuples, index
// size, the pending scan's buffers; InnoDB's history list on MariaDB).
import {setPriority} from 'node:os'
import {openProducer} from './business.js'
import {DIALECTS, driver} from './lib-under-test.js'
import {mariadbGauges} from './pressure-mariadb-gauge.js'

const [pg, mysql] = await Promise.all([driver('pg'), driver('mysql2/promise')])

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)))
// The open loop's clock: how often it checks what is due. Finer than 1 ms sleeps, which cap a
// one-at-a-time loop near 1,000/s.
const TICK_MS = 5
// a producer whose connection died tries a new one this often (server restart, no free slot)
const REOPEN_MS = 200

/** A plain session on its own connection: run(text) and end(), either server. */
export async function session(dialect, url) {
  if (dialect === 'postgres') {
    const client = new pg.Client({connectionString: url})
    await client.connect()
    const s = {run: async (text, values = []) => (await client.query(text, values)).rows, end: () => client.end().catch(() => {}), client, dead: false}
    client.on('error', () => (s.dead = true))
    client.on('end', () => (s.dead = true))
    return s
  }
  const u = new URL(url)
  const connection = await mysql.createConnection({host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database: u.pathname.slice(1)})
  const s = {run: async (text, values = []) => (await connection.query(text, values))[0], end: () => connection.end().catch(() => {}), client: connection, dead: false}
  connection.on('error', () => (s.dead = true))
  connection.on('end', () => (s.dead = true))
  return s
}

/** session(), opened again on the next run() once its connection died (a server restart, a KILL). */
export function reconnecting(dialect, url) {
  let current
  const live = async () => {
    if (!current || current.dead) {
      await current?.end()
      current = undefined
      current = await session(dialect, url)
    }
    return current
  }
  return {run: async (text, values) => (await live()).run(text, values), end: async () => current?.end()}
}

/**
 * `connections` producers writing `rate` events/s on schedule; onCommit(id, committedAt) for
 * each committed one. setRate() changes the rate from now on. A failed transaction's producer
 * is replaced (its session may be stuck in an aborted transaction) and counted.
 */
export async function startProducers({dialect, url, names, connections, rate, onCommit}) {
  // index 0 owns the orders table (creates it, drops it at close) and writes nothing
  const owner = await openProducer(dialect, url, names, 0)
  let nextIndex = 1
  const idle = []
  for (; nextIndex <= connections; nextIndex++) idle.push(await openProducer(dialect, url, names, nextIndex))
  const inFlight = new Set()
  const stats = {errors: 0, lastError: undefined}
  let base = {at: performance.now(), count: 0, rate}
  let dispatched = 0
  let running = true
  const loop = (async () => {
    while (running) {
      const due = base.count + Math.floor(((performance.now() - base.at) * base.rate) / 1000)
      // never more than a second of catching up: a stalled server is reported as a lower rate
      if (due - dispatched > base.rate) dispatched = due - base.rate
      while (running && dispatched < due && idle.length > 0) {
        dispatched++
        const p = idle.pop()
        const tx = p
          .order(true)
          .then(({id, committedAt}) => {
            onCommit(id, committedAt)
            idle.push(p)
          })
          .catch(async (error) => {
            stats.errors++
            stats.lastError = error.message
            await p.close().catch(() => {})
            // the server may be restarting or out of slots: try again until it takes us
            while (running) {
              try {
                return idle.push(await openProducer(dialect, url, names, nextIndex++))
              } catch {
                await sleep(REOPEN_MS)
              }
            }
          })
          .finally(() => inFlight.delete(tx))
        inFlight.add(tx)
      }
      await sleep(TICK_MS)
    }
  })()
  return {
    stats,
    setRate(next) {
      const now = performance.now()
      base = {at: now, count: base.count + Math.floor(((now - base.at) * base.rate) / 1000), rate: next}
    },
    async stop() {
      running = false
      await loop
      await Promise.allSettled([...inFlight])
      for (const p of idle) await p.close().catch(() => {})
      await owner.close().catch(() => {})
    },
  }
}

// The control's pace: ten round trips a second is enough for a p99 per phase of minutes.
const CONTROL_MS = 100

/**
 * The control: `SELECT 1` on its own connection every CONTROL_MS, each round trip timed. It does
 * no outbox work, so when its p99 rises with the relays' the machine (cores, the server's
 * scheduling) is what slowed both, not the claim.
 */
export function startControl(dialect, url) {
  const s = reconnecting(dialect, url)
  const samples = [] // {t: performance.now() at the start, ms}
  let running = true
  const loop = (async () => {
    while (running) {
      const start = performance.now()
      const ok = await s.run('SELECT 1').then(() => true, () => false)
      if (ok) samples.push({t: start, ms: performance.now() - start})
      await sleep(CONTROL_MS - (performance.now() - start))
    }
  })()
  return {samples, stop: async () => ((running = false), await loop, await s.end())}
}

/** A session holding a transaction with an xid (PostgreSQL) or a consistent snapshot (InnoDB). */
export async function holdHorizon(dialect, url, table) {
  const s = await session(dialect, url)
  if (dialect === 'postgres') await s.run('BEGIN; SELECT txid_current()')
  else {
    await s.run('START TRANSACTION WITH CONSISTENT SNAPSHOT')
    await s.run(`SELECT COUNT(*) FROM ${table}`)
  }
  // end(): on Ctrl-C, closing the connection is the rollback
  return {release: async () => (await s.run('ROLLBACK').catch(() => {}), await s.end()), end: () => s.end()}
}

/**
 * `count` REPEATABLE READ sessions, each one transaction scanning the outbox in a loop. `nice`
 * (PostgreSQL on this machine): each reader's backend process runs at that nice level and
 * scans without parallel workers (processes of their own, which would not be reniced), so the
 * readers get the CPU nothing else wants: the closest this machine gets to a server with cores
 * to spare for them. Not close enough: they still share memory and shared buffers, and the
 * machine still slowed (bench/results/pressure-readers-nice.md).
 */
export async function startReaders(dialect, url, table, count, {pauseMs = 200, nice} = {}) {
  let running = true
  const loops = []
  const sessions = []
  for (let i = 0; i < count; i++) {
    const s = await session(dialect, url)
    sessions.push(s)
    if (nice !== undefined) await reniceBackend(s, nice)
    await s.run(dialect === 'postgres' ? 'BEGIN ISOLATION LEVEL REPEATABLE READ' : 'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
    if (dialect !== 'postgres') await s.run('START TRANSACTION')
    loops.push(
      (async () => {
        while (running) {
          await s.run(`SELECT COUNT(*), MAX(created_at) FROM ${table} WHERE published_at IS NOT NULL`).catch(() => {})
          await sleep(pauseMs)
        }
        await s.run('ROLLBACK').catch(() => {})
        await s.end()
      })(),
    )
    await sleep(pauseMs / count) // staggered: their snapshots differ
  }
  return {stop: async () => ((running = false), await Promise.all(loops)), end: async () => ((running = false), await Promise.all(sessions.map((s) => s.end())))}
}

/** A PostgreSQL session's backend process at `nice`, and its statements without parallel workers. */
async function reniceBackend(s, nice) {
  const [{pid}] = await s.run('SELECT pg_backend_pid() AS pid')
  try {
    setPriority(pid, nice)
  } catch (e) {
    throw new Error(`pressure: --readers-nice: cannot renice the reader's backend (pid ${pid}: ${e.code ?? e.message}); it needs the PostgreSQL server on this machine and the right to renice its processes`)
  }
  await s.run('SET max_parallel_workers_per_gather = 0')
}

/**
 * PostgreSQL: a low-water mark kept as the relay keeps its own (the dialect's claimMark
 * statements), moved once per sample (every 2 s; the relay's moves every 50 ms at most); no lock.
 * `state` carries the mark between samples.
 */
async function moveMark(s, names, state) {
  const pg = DIALECTS.postgres
  const run = async (statement) => {
    const {text, params} = pg.render.compile(statement)
    return (await s.run(text, params))[0]
  }
  const {bound} = await run(pg.relay.claimMark.writersBound(names))
  state.mark = (await run(pg.relay.claimMark.next(names, state.mark ?? pg.relay.claimMark.none, bound))).mark ?? bound
}

/**
 * The relays' own claim statement from the gauge's mark (the library's, batch 100: FOR UPDATE
 * SKIP LOCKED, the lease UPDATE, RETURNING) under EXPLAIN (ANALYZE, BUFFERS) in a transaction
 * rolled back: the buffers a relay's claim reads, a figure the machine's load does not change.
 * While it runs it holds up to 100 pending rows, which the relays skip: taken every 2 s it
 * delayed those events by its own length, the longer the horizon was held (the quiet 10-minute
 * run of 2026-12-05, p99 28 -> 599 ms), so it is taken once, at the end of each phase
 * (state.claimWanted). Its rolled-back lease leaves up to 100 dead row versions.
 */
async function markClaim(s, names, state) {
  const pg = DIALECTS.postgres
  const claim = pg.render.compile(pg.relay.claim(names, {batch: 100, leaseMs: 30_000, owner: 'pressure-gauge', from: state.mark}).statement)
  await s.run('BEGIN')
  try {
    const [plan] = await s.run(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claim.text}`, claim.params)
    const buffers = (node) => node['Shared Hit Blocks'] + node['Shared Read Blocks']
    const top = plan['QUERY PLAN'][0].Plan
    // the pick (CTE c: the index scan from the mark, locking with SKIP LOCKED); the whole
    // statement adds the lease UPDATE's ~10 buffers a row
    const pick = findNode(top, (node) => node['Subplan Name'] === 'CTE c')
    return {markScanBuffers: pick ? buffers(pick) : undefined, markClaimBuffers: buffers(top)}
  } finally {
    await s.run('ROLLBACK')
  }
}

/** The first node of an EXPLAIN (FORMAT JSON) plan tree that `test` accepts. */
function findNode(node, test) {
  if (test(node)) return node
  for (const child of node.Plans ?? []) {
    const found = findNode(child, test)
    if (found) return found
  }
  return undefined
}

async function markGauges(s, names, state) {
  await moveMark(s, names, state)
  if (!state.claimWanted) return {}
  try {
    return await markClaim(s, names, state)
  } finally {
    state.claimWanted = false
  }
}

/** The outbox's gauges now: one row of numbers (the relays' claim from the mark only when state.claimWanted). */
export async function gauges(dialect, s, names, state = {}) {
  if (dialect === 'postgres') {
    const [t] = await s.run('SELECT n_dead_tup::int AS dead, n_live_tup::int AS live FROM pg_stat_user_tables WHERE relname = $1', [names.outbox])
    const [size] = await s.run(`SELECT pg_relation_size($1::regclass)::bigint AS pending_index, pg_indexes_size($2::regclass)::bigint AS indexes`, [`${names.outbox}_pending_idx`, names.outbox])
    // the claim's index scan, read-only (no FOR UPDATE, so no relay is kept waiting)
    const [plan] = await s.run(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id FROM ${names.outbox} WHERE published_at IS NULL AND failed_at IS NULL AND (lease_until IS NULL OR lease_until < now()) ORDER BY created_at, id LIMIT 100`)
    const top = plan['QUERY PLAN'][0]
    return {dead: t?.dead ?? 0, pendingIndexKiB: Number(size.pending_index) / 1024, indexesKiB: Number(size.indexes) / 1024, scanBuffers: top.Plan['Shared Hit Blocks'] + top.Plan['Shared Read Blocks'], scanMs: top['Execution Time'], ...(await markGauges(s, names, state))}
  }
  return mariadbGauges(s, names, state)
}
