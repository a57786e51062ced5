// graphile-worker 0.17 with the settings of its performance page: concurrentJobs 24,
// maxPoolSize 25, localQueue {size: 500}, completeJobBatchDelay 0, failJobBatchDelay 0.
import {Logger, makeWorkerUtils, run} from 'graphile-worker'
import {PG_URL} from '../servers.js'

const SCHEMA = 'bench_graphile'
const CONCURRENT_JOBS = 24
const quiet = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`)
})

export function graphilePeer() {
  return {
    key: 'graphile-worker',
    label: `graphile-worker (concurrentJobs ${CONCURRENT_JOBS}, localQueue 500)`,
    how: `\`run({preset: {worker: {concurrentJobs: ${CONCURRENT_JOBS}, maxPoolSize: ${CONCURRENT_JOBS + 1}, localQueue: {size: 500}, completeJobBatchDelay: 0, failJobBatchDelay: 0}}, taskList: {noop}})\`, the configuration of its own performance page (local queue = jobs fetched and locked 500 at a time; completions batched into one statement). Timed from \`run()\` until the last job row is gone (completion is batched, so the handler finishing is not the end), so it includes the runner's start-up, reported separately. Jobs enqueued with \`addJobs()\` in chunks of 1000, no \`jobKey\`.`,
    async open() {
      const utils = await makeWorkerUtils({connectionString: PG_URL, schema: SCHEMA, logger: quiet})
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
                connectionString: PG_URL,
                schema: SCHEMA,
                concurrentJobs: CONCURRENT_JOBS,
                maxPoolSize: CONCURRENT_JOBS + 1,
                localQueue: {size: 500},
                completeJobBatchDelay: 0,
                failJobBatchDelay: 0,
              },
            },
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
        },
      }
    },
  }
}
