// The pressure run's MariaDB gauges: InnoDB's history list, the indexes' size, the claim's
// index scan from the start (a plain SELECT, no lock) as pages accessed under ANALYZE FORMAT=JSON
// (r_engine_stats: load-independent, as buffers are on PostgreSQL) and timed, and, once at each
// phase's end, the relays' own locking read from a low-water mark the gauge keeps with the
// dialect's claimMark statements (the default 2 s margin), moved every sample.
import {DIALECTS} from './lib-under-test.js'

const my = DIALECTS.mysql
// the relay's default margin (DEFAULT_MARK_MARGIN_MS in src/relay/claim-mark.ts)
const MARGIN_MS = 2000

/** Pages accessed by a statement under ANALYZE FORMAT=JSON (the first table of its plan). */
async function pages(s, text, params) {
  const [row] = await s.run(`ANALYZE FORMAT=JSON ${text}`, params)
  const q = JSON.parse(Object.values(row)[0]).query_block
  const table = q.nested_loop?.[0]?.table ?? q.table
  return Number(table?.r_engine_stats?.pages_accessed ?? NaN)
}

async function moveMark(s, names, state) {
  const part = my.relay.claimMark
  const first = async (statement) => {
    const {text, params} = my.render.compile(statement)
    return (await s.run(text, params))[0]
  }
  const {bound} = await first(part.writersBound(names, MARGIN_MS))
  state.mark = (await first(part.next(names, state.mark ?? part.none, bound))).mark
}

/**
 * The relays' locking read (batch 100, READ COMMITTED, FOR UPDATE SKIP LOCKED) from the gauge's
 * mark, in a transaction rolled back: it holds up to 100 pending rows while it runs, so it is
 * taken once, at the phase's end (state.claimWanted), as on PostgreSQL.
 */
async function markClaim(s, names, state) {
  const plan = my.relay.claim(names, {batch: 100, leaseMs: 30_000, owner: 'pressure-gauge', from: state.mark})
  const {text, params} = my.render.compile(plan.lock)
  await s.run('SET TRANSACTION ISOLATION LEVEL READ COMMITTED')
  await s.run('START TRANSACTION')
  try {
    return {markScanBuffers: await pages(s, text, params)}
  } finally {
    await s.run('ROLLBACK')
  }
}

export async function mariadbGauges(s, names, state) {
  const [h] = await s.run(`SELECT COUNT AS n FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'`)
  const [size] = await s.run('SELECT INDEX_LENGTH AS i FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?', [names.outbox])
  const started = performance.now()
  const scanBuffers = await pages(s, `SELECT id FROM ${names.outbox} FORCE INDEX (${names.outbox}_claim_idx) WHERE published_at IS NULL AND failed_at IS NULL AND (lease_until IS NULL OR lease_until < UTC_TIMESTAMP(6)) ORDER BY created_at, id LIMIT 100`)
  const scanMs = performance.now() - started
  await moveMark(s, names, state)
  const gauge = {historyLength: Number(h?.n ?? 0), indexesKiB: Number(size?.i ?? 0) / 1024, scanBuffers, scanMs}
  if (!state.claimWanted) return gauge
  try {
    return {...gauge, ...(await markClaim(s, names, state))}
  } finally {
    state.claimWanted = false
  }
}
