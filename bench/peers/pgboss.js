// pg-boss 10: jobs inserted in bulk with insert(), then `concurrency` loops of
// fetch(queue, {batchSize: 100}) + complete(queue, ids) until the queue is empty.
import PgBoss from 'pg-boss'
import pg from 'pg'
import {PG_URL} from '../servers.js'

const SCHEMA = 'bench_pgboss'

export function pgBossPeer({concurrency}) {
  return {
    key: `pg-boss-c${concurrency}`,
    label: `pg-boss (concurrency ${concurrency})`,
    how: `${concurrency} loop(s) of \`fetch(queue, {batchSize: 100, priority: false})\` + \`complete(queue, ids)\` (the batch API; \`work()\` sleeps \`pollingIntervalSeconds\` between batches, so a drain through it measures the sleep). \`priority: false\` because no job has a priority. Standard queue policy; \`supervise\`/\`schedule\` off so maintenance does not run mid-measurement; pool max ${concurrency + 2}. Jobs enqueued with \`insert()\` in chunks of 1000.`,
    async open() {
      // A fresh schema per suite run and a fresh queue per round: deleteQueue() on a queue
      // that still holds jobs fails on its foreign key in 10.4.
      const dropSchema = async () => {
        const client = new pg.Client({connectionString: PG_URL})
        await client.connect()
        await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
        await client.end()
      }
      await dropSchema()
      let queue
      let round = 0
      const boss = new PgBoss({connectionString: PG_URL, schema: SCHEMA, supervise: false, schedule: false, max: concurrency + 2})
      boss.on('error', (error) => console.error(`pg-boss: ${error.message}`))
      await boss.start()
      return {
        async prepare(n) {
          queue = `bench_${++round}`
          await boss.createQueue(queue)
          for (let i = 0; i < n; i += 1000) {
            await boss.insert(Array.from({length: Math.min(1000, n - i)}, (_, k) => ({name: queue, data: {n: i + k}})))
          }
          await boss.getDb().executeSql(`ANALYZE ${SCHEMA}.job`, [])
        },
        async drain() {
          let moved = 0
          const started = performance.now()
          const loop = async () => {
            for (;;) {
              const jobs = await boss.fetch(queue, {batchSize: 100, priority: false})
              if (jobs.length === 0) return
              await boss.complete(queue, jobs.map((j) => j.id))
              moved += jobs.length
            }
          }
          await Promise.all(Array.from({length: concurrency}, loop))
          return {ms: performance.now() - started, moved}
        },
        async close() {
          await boss.stop({graceful: false, wait: true})
          await dropSchema()
        },
      }
    },
  }
}
