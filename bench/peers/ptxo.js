// pg-transactional-outbox 0.5 with its polling listener (its logical-replication listener
// needs wal_level = logical, a server restart on this shared PostgreSQL).
import ptxo from 'pg-transactional-outbox'
import pg from 'pg'
import {pgConfig, PG_URL} from '../servers.js'

const {DatabaseSetup, initializePollingMessageListener, getDisabledLogger} = ptxo
const SCHEMA = 'bench_ptxo'
const setup = {outboxOrInbox: 'outbox', database: 'bench', schema: SCHEMA, table: 'outbox', listenerRole: 'postgres', nextMessagesName: 'next_outbox_messages'}

export function ptxoPeer() {
  return {
    key: 'pg-transactional-outbox',
    label: 'pg-transactional-outbox (polling, batch 100)',
    how: `\`initializePollingMessageListener\` with \`nextMessagesBatchSize: 100\` (default 5), \`nextMessagesPollingIntervalInMs: 100\`, a \`GeneralMessageHandler\` that does nothing, max-attempts and poison protection off (its README's outbox settings), cleanup off; schema, \`next_outbox_messages\` function and indexes from its \`DatabaseSetup\`; messages \`concurrency: 'parallel'\` so they are not serialised per segment. It hands out each message in its own transaction (lock, handler, mark processed), by design. The logical-replication listener was not run: it needs \`wal_level = logical\` (this server: \`replica\`; changing it restarts a server other engineers use).`,
    async open() {
      const pool = new pg.Pool({...pgConfig(), max: 2})
      return {
        async prepare(n) {
          await pool.query(DatabaseSetup.dropAndCreateTable(setup))
          await pool.query(DatabaseSetup.createPollingFunction(setup))
          await pool.query(DatabaseSetup.setupPollingIndexes(setup))
          await pool.query(
            `INSERT INTO ${SCHEMA}.outbox (id, aggregate_type, aggregate_id, message_type, concurrency, payload, created_at)
SELECT gen_random_uuid(), 'order', 'order-' || i, 'order.created', 'parallel', jsonb_build_object('n', i), clock_timestamp()
FROM generate_series(1, $1::int) AS i`,
            [n],
          )
          await pool.query(`ANALYZE ${SCHEMA}.outbox`)
        },
        async drain(n) {
          let done = 0
          let allRan
          const ran = new Promise((resolve) => (allRan = resolve))
          const started = performance.now()
          const [shutdown] = initializePollingMessageListener(
            {
              outboxOrInbox: 'outbox',
              dbListenerConfig: pgConfig(),
              settings: {
                dbSchema: SCHEMA,
                dbTable: 'outbox',
                enableMaxAttemptsProtection: false,
                enablePoisonousMessageProtection: false,
                nextMessagesFunctionName: 'next_outbox_messages',
                nextMessagesFunctionSchema: SCHEMA,
                nextMessagesBatchSize: 100,
                nextMessagesPollingIntervalInMs: 100,
                messageCleanupIntervalInMs: 0,
              },
            },
            {handle: async () => void (++done === n && allRan())},
            getDisabledLogger(),
          )
          // The listener's loop holds no handle of its own while it waits: keep the process up.
          const keepAlive = setInterval(() => {}, 1000)
          await ran
          const pending = async () => (await pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.outbox WHERE processed_at IS NULL`)).rows[0].n
          while ((await pending()) > 0) await new Promise((r) => setTimeout(r, 2))
          const ms = performance.now() - started
          clearInterval(keepAlive)
          await shutdown()
          return {ms, moved: done}
        },
        async close() {
          await pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch(() => {})
          await pool.end()
        },
      }
    },
  }
}
