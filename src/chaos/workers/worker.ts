// A chaos worker process: `node dist/src/chaos/workers/worker.js` with OUTBOX_CHAOS_WORKER (JSON) set.
// It runs the project's own producer (writeEvent), relay (relay-worker.ts) and consumer runtime
// (consumer-worker.ts) against the run's scratch tables; an armed failpoint (OUTBOX_FAILPOINTS)
// kills it by SIGKILL mid-step.
// Protocol on stdout, one line each: "ready", "op <n>" before business op n starts, "op-error <n>"
// when it failed and was passed over (goOnAfterErrors), "done".
import {randomUUID} from 'node:crypto'
import {writeSync} from 'node:fs'
import type {CompiledQuery as CompiledQueryType, Transaction} from 'kysely'
import type {Sql} from '../../../dialects/index.js'
import {openDb, type Db, type Queryable, type Row} from '../../db/index.js'
import {writeEvent} from '../../producer.js'
import {failpoint} from '../../core/failpoints.js'
import {loadScenario, scenarioContext, type Scenario, type ScenarioContext} from '../business-scenario.js'
import {openPublisher, type BrokerSpec} from './transport.js'
import {runTables, type RunTables} from '../tables.js'
import {runConsumer} from './consumer-worker.js'
import {runRelay} from './relay-worker.js'
import {usesRelay, type ConsumerMode, type Strategy} from '../strategies.js'

export interface WorkerConfig {
  role: 'producer' | 'relay' | 'consumer'
  url: string
  prefix: string
  scenarioPath?: string
  ops: number
  /** producer: first op to run (after a restart, the op after the one that died) */
  opStart?: number
  /** producer: an op that fails is passed over ("op-error <n>" on stdout), not the end (a COMMIT's lost answer) */
  goOnAfterErrors?: boolean
  /** producer: event ids to use for op n's first event (the poison message) */
  ids?: Record<string, string>
  strategy: Strategy
  consumerMode: ConsumerMode
  consumerName: string
  broker: BrokerSpec
  relay: {batch: number; leaseMs: number; pollMs: number; maxAttempts: number; backoff: {baseMs: number; capMs: number}; owner: string}
}

const say = (line: string) => writeSync(1, line + '\n')

/** A Kysely transaction as the Queryable a scenario's write() receives. */
function kyselyQueryable(trx: Transaction<any>, db: Db, CompiledQuery: typeof CompiledQueryType): Queryable {
  const run = async (statement: Sql) => {
    const {text, params} = db.dialect.render.compile(statement)
    return trx.executeQuery(CompiledQuery.raw(text, params))
  }
  return {
    query: async <R = Row>(s: Sql) => (await run(s)).rows as R[],
    execute: async (s: Sql) => {
      const r = await run(s)
      return Number(r.numAffectedRows ?? r.numChangedRows ?? r.rows.length)
    },
  }
}

async function producer(config: WorkerConfig, db: Db, scenario: Scenario, ctx: ScenarioContext, t: RunTables): Promise<void> {
  // kysely only here: it is the slowest import, and relay and consumer do not need it
  const [kysely, {CompiledQuery}] = await Promise.all([db.kysely(), import('kysely')])
  const q = (trx: Transaction<any>) => kyselyQueryable(trx, db, CompiledQuery)
  const outbox = usesRelay(config.strategy)
  const publisher = outbox ? undefined : await openPublisher(config.broker, t.prefix)
  /** Business op n, written the strategy's way. */
  const runOp = async (op: number): Promise<void> => {
    const fixedId = config.ids?.[String(op)]
    if (outbox) {
      // The pattern: business row and event in one transaction.
      await kysely.transaction().execute(async (trx) => {
        const events = await scenario.write(q(trx), op, ctx)
        for (const [i, event] of events.entries()) await writeEvent(trx, {...event, id: i === 0 && fixedId ? fixedId : event.id}, {tables: t.outbox})
        failpoint('producer.before-commit')
      })
      failpoint('producer.after-commit')
    } else if (config.strategy === 'dual-write-commit-first') {
      // Broken on purpose: commit, then publish directly. A crash in between loses the event.
      const events = await kysely.transaction().execute(async (trx) => {
        const written = await scenario.write(q(trx), op, ctx)
        failpoint('producer.before-commit')
        return written
      })
      failpoint('producer.after-commit')
      await publisher!.send(events.map((e, i) => ({...e, id: i === 0 && fixedId ? fixedId : e.id ?? randomUUID()})))
    } else {
      // Broken on purpose: publish, then commit. A crash in between leaves a phantom event.
      await kysely.transaction().execute(async (trx) => {
        const events = await scenario.write(q(trx), op, ctx)
        await publisher!.send(events.map((e, i) => ({...e, id: i === 0 && fixedId ? fixedId : e.id ?? randomUUID()})))
        failpoint('producer.before-commit')
      })
      failpoint('producer.after-commit')
    }
  }
  for (let op = config.opStart ?? 0; op < config.ops; op++) {
    say(`op ${op}`)
    try {
      await runOp(op)
    } catch (error) {
      if (!config.goOnAfterErrors) throw error
      // committed or not is the database's to tell: the invariants read it after the drain
      writeSync(2, `op ${op} failed: ${String((error as Error)?.message ?? error)}\n`)
      say(`op-error ${op}`)
    }
  }
  await publisher?.close()
  say('done')
}

async function main(): Promise<void> {
  // orphaned (the harness died without killing us): stop rather than run forever
  const parent = process.ppid
  setInterval(() => process.ppid !== parent && process.exit(0), 500).unref()
  const config = JSON.parse(process.env.OUTBOX_CHAOS_WORKER ?? '') as WorkerConfig
  const db = await openDb(config.url, {poolSize: 2, busyTimeoutMs: 10_000})
  const t = runTables(config.prefix)
  if (config.role === 'relay') {
    await runRelay(config, db, t, say)
  } else {
    const {scenario} = await loadScenario(config.scenarioPath)
    const ctx = scenarioContext(db.dialect, config.prefix, config.ops)
    if (config.role === 'producer') await producer(config, db, scenario, ctx, t)
    else await runConsumer(config, db, scenario, ctx, t, say)
  }
  await db.close()
  process.exit(0)
}

main().catch((error: unknown) => {
  writeSync(2, `outbox-chaos-worker error: ${String((error as Error)?.stack ?? error)}\n`)
  process.exit(3)
})
