// Our relay: pre-inserted outbox events drained by Relay.drainOnce() to a no-op publisher.
import {dropTables, freshTables, noopPublisher, seedPostgres} from '../outbox.js'
import {lib, PG_URL} from '../servers.js'

export function outboxPeer({concurrency}) {
  return {
    key: `outbox-c${concurrency}`,
    label: `outbox relay (concurrency ${concurrency})`,
    how: `\`new Relay({db, publisher: noop, batch: 100, concurrency: ${concurrency}})\`, then \`drainOnce()\`: each loop claims 100 (one UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING), publishes, marks them in one UPDATE. Pool of ${concurrency + 1} connections.`,
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
          const relay = new lib.Relay({db, publisher: noopPublisher(), tables: names, batch: 100, concurrency, leaseMs: 60_000})
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
