// graphile-worker 0.17 with the settings of its performance page: concurrentJobs 24,
// maxPoolSize 25, localQueue {size: 500}, completeJobBatchDelay 0, failJobBatchDelay 0.
import {Logger, makeWorkerUtils, run} from 'graphile-worker'
import pg from 'pg'
import {PG_URL} from '../servers.js'

const SCHEMA = 'bench_graphile'
const CONCURRENT_JOBS = 24
/** connections opened before timing, as the relay's are: graphile-worker's fetch, completions and LISTEN, and a spare */
const WARM = 4
const quiet = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`)
})

export function graphilePeer() {
  return {
    key: 'graphile-worker',
    label: `graphile-worker (concurrentJobs ${CONCURRENT_JOBS}, localQueue 500)`,
    how: `\`run({preset: {worker: {concurrentJobs: ${CONCURRENT_JOBS}, maxPoolSize: ${CONCURRENT_JOBS + 1}, localQueue: {size: 500}, completeJobBatchDelay: 0, failJobBatchDelay: 0}}, taskList: {noop}})\`, the configuration of its own performance page (local queue = jobs fetched and locked 500 at a time; completions batched into one statement). Its pool (\`pgPool\`, ${CONCURRENT_JOBS + 1} max) is opened once and ${WARM} connections are opened before each timed drain, as the relay's pool is warmed (connection set-up is neither tool's work). Timed from \`run()\` until the last job row is gone (completion is batched, so the handler finishing is not the end), so it includes the runner's own start-up (its schema check, task list, LISTEN), reported separately. Jobs enqueued with \`addJobs()\` in chunks of 1000, no \`jobKey\`.`,
    async open() {
      const pgPool = new pg.Pool({connectionString: PG_URL, max: CONCURRENT_JOBS + 1})
      // what graphile-worker asks of a pool it is given: an idle client's error, and a client's own
      pgPool.on('error', (error) => console.error(`graphile-worker pool: ${error.message}`))
      pgPool.on('connect', (client) => client.on('error', (error) => console.error(`graphile-worker client: ${error.message}`)))
      const utils = await makeWorkerUtils({pgPool, schema: SCHEMA, logger: quiet})
      await utils.migrate()
      const jobCount = async () =>
        (await utils.withPgClient((c) => c.query(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs`))).rows[0].n
      return {
        async prepare(n) {
          await utils.withPgClient((c) => c.query(`DELETE FROM ${SCHEMA}._private_jobs`))
          for (let i = 0; i < n; i += 1000) {
            await utils.addJobs(Array.from({length: Math.min(1000, n - i)}, (_, k) => ({identifier: 'noop', payload: {n: i + k}})))
          }
          await utils.withPgClient((c) => c.query(`ANALYZE ${SCHEMA}._private_jobs`))
          const clients = await Promise.all(Array.from({length: WARM}, () => pgPool.connect()))
          clients.forEach((c) => c.release())
        },
        async drain(n) {
          let done = 0
          let firstJobMs
          let allRan
          const ran = new Promise((resolve) => (allRan = resolve))
          const started = performance.now()
          const runner = await run({
            preset: {
              worker: {
                schema: SCHEMA,
                concurrentJobs: CONCURRENT_JOBS,
                maxPoolSize: CONCURRENT_JOBS + 1,
                localQueue: {size: 500},
                completeJobBatchDelay: 0,
                failJobBatchDelay: 0,
              },
            },
            pgPool,
            logger: quiet,
            noHandleSignals: true,
            taskList: {
              noop: async () => {
                firstJobMs ??= performance.now() - started
                if (++done === n) allRan()
              },
            },
          })
          await ran
          while ((await jobCount()) > 0) await new Promise((r) => setTimeout(r, 2))
          const ms = performance.now() - started
          await runner.stop()
          return {ms, moved: done, startupMs: firstJobMs}
        },
        async close() {
          await utils.release()
          await pgPool.end()
        },
      }
    },
  }
}
