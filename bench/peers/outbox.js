// Our relay: pre-inserted outbox events drained by Relay.drainOnce() to a no-op publisher.
import {dropTables, freshTables, noopPublisher, seedPostgres} from '../outbox.js'
import {lib, PG_URL} from '../servers.js'

export function outboxPeer({concurrency, batch = 100}) {
  return {
    key: `outbox-c${concurrency}${batch === 100 ? '' : `-b${batch}`}`,
    label: `outbox relay (concurrency ${concurrency}${batch === 100 ? '' : `, batch ${batch}`})`,
    how: `\`new Relay({db, publisher: noop, batch: ${batch}, concurrency: ${concurrency}})\`, then \`drainOnce()\`: each of the ${concurrency} loop(s) claims ${batch} events (one statement: \`WITH c AS MATERIALIZED (SELECT ... FOR UPDATE SKIP LOCKED LIMIT ${batch}) UPDATE ... RETURNING\`), publishes them, and marks them published in one UPDATE. Pool of ${concurrency + 1} connections. Events inserted with one INSERT ... SELECT generate_series.`,
    async open() {
      const db = await lib.openDb(PG_URL, {poolSize: concurrency + 1})
      let names
      return {
        async prepare(n) {
          if (names) await dropTables(db, names)
          names = await freshTables(db, 'peer')
          await seedPostgres(db, names, n)
        },
        async drain() {
          const relay = new lib.Relay({db, publisher: noopPublisher(), tables: names, batch, concurrency, leaseMs: 60_000})
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
