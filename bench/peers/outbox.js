// Our relay: pre-inserted outbox events drained by Relay.drainOnce() to a no-op publisher.
// By default its connections commit as `outbox relay` opens them (PostgreSQL
// synchronous_commit = off, the library's `asyncCommit` open option); `durable: true` keeps
// the server's setting (on), like the peers' commits, for a like-for-like row.
import {dropTables, freshTables, noopPublisher, seedPostgres} from '../outbox.js'
import {lib, PG_URL} from '../servers.js'

/** Opens `n` of the pool's connections (concurrent queries), so connecting is not timed. */
export async function warm(db, n) {
  await Promise.all(Array.from({length: n}, () => db.query(lib.sql`SELECT pg_sleep(0.005)`)))
}

// fixed: maxBatch = batch, every claim the same size (the relay before claims grew)
export function outboxPeer({concurrency, batch = 100, durable = false, leaseBy = 'row', fixed = false}) {
  const tx = leaseBy === 'transaction'
  const commits = durable ? 'durable commits' : 'synchronous_commit = off'
  const sizes = fixed ? `batch: ${batch}, maxBatch: ${batch}` : `batch: ${batch}`
  const grows = fixed ? `every claim asks for ${batch}` : `claims start at ${batch} and double while they come back full, up to the default maxBatch (${Math.min(batch * 10, Math.max(batch, 1000))})`
  return {
    key: `outbox-c${concurrency}${batch === 100 ? '' : `-b${batch}`}${fixed ? '-fixed' : ''}${durable ? '-durable' : ''}${tx ? '-txlease' : ''}`,
    label: `outbox relay (concurrency ${concurrency}${batch === 100 ? '' : `, batch ${batch}`}${fixed ? `, fixed batch ${batch}` : ''}${durable ? ', durable commits' : ''}${tx ? ', lease by transaction' : ''})`,
    how: tx
      ? `\`openDb(url, {poolSize: ${concurrency + 1}${durable ? '' : ', asyncCommit: true'}})\` (${commits}), \`new Relay({db, publisher: noop, ${sizes}, concurrency: ${concurrency}, leaseBy: 'transaction'})\`, then \`drainOnce()\` (${grows}): each of the ${concurrency} loop(s) holds a pooled connection per batch and sends two scripts (simple protocol, values inlined): \`BEGIN; SET LOCAL idle_in_transaction_session_timeout = <lease>; SELECT ... ORDER BY created_at, id LIMIT ${batch} FOR UPDATE SKIP LOCKED\` (the rows locked, nothing written), publishes the batch, then \`UPDATE ... SET published_at = statement_timestamp() ...; COMMIT\`: one new row version per event and one commit per batch. Events inserted with one INSERT ... SELECT generate_series; the pool's ${concurrency + 1} connections opened before timing.`
      : `\`openDb(url, {poolSize: ${concurrency + 1}${durable ? '' : ', asyncCommit: true'}})\` (${commits}${durable ? ': the server default, as pg-boss and graphile-worker commit' : ', as `outbox relay` opens its connections'}), \`new Relay({db, publisher: noop, ${sizes}, concurrency: ${concurrency}})\`, then \`drainOnce()\` (${grows}): each of the ${concurrency} loop(s) claims a batch (one statement: \`WITH c AS MATERIALIZED (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n) UPDATE ... RETURNING\`; the pick starts at the relay's low-water mark), publishes them, and the loop's next claim marks them published in its statement (a data-modifying CTE: one commit per batch; the last marks ride on the empty claim that ends the drain; a claim is sent ahead of the publish only when publishing takes a real share of a claim's time, which this no-op publisher never does). At most one claim per loop is in flight at a time. Events inserted with one INSERT ... SELECT generate_series; the pool's ${concurrency + 1} connections opened before timing.`,
    async open() {
      const db = await lib.openDb(PG_URL, {poolSize: concurrency + 1, asyncCommit: !durable})
      let names
      return {
        async prepare(n) {
          if (names) await dropTables(db, names)
          names = await freshTables(db, 'peer')
          await seedPostgres(db, names, n)
          await warm(db, concurrency + 1)
        },
        async drain() {
          const relay = new lib.Relay({db, publisher: noopPublisher(), tables: names, batch, ...(fixed ? {maxBatch: batch} : {}), concurrency, leaseMs: 60_000, ...(tx ? {leaseBy: 'transaction'} : {})})
          const started = performance.now()
          const result = await relay.drainOnce()
          return {ms: performance.now() - started, moved: result.published}
        },
        async close() {
          if (names) await dropTables(db, names)
          await db.close()
        },
      }
    },
  }
}
