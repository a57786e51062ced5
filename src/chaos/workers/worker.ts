// A chaos worker process: `node dist/src/chaos/workers/worker.js` with OUTBOX_CHAOS_WORKER (JSON) set.
// It runs the project's own producer (writeEvent), relay (relay-worker.ts) and consumer runtime
// (consumer-worker.ts) against the run's scratch tables; an armed failpoint (OUTBOX_FAILPOINTS)
// kills it by SIGKILL mid-step.
// Protocol on stdout, one line each: "ready", "op <n>" before business op n starts, "op-error <n>"
// when it failed and was passed over (goOnAfterErrors), "done", and with `history` set,
// "h {...}" per operation (../history.ts).
import {writeSync} from 'node:fs'
import type {CompiledQuery as CompiledQueryType, Transaction} from 'kysely'
import type {Sql} from '../../../dialects/index.js'
import {openDb, type Db, type Queryable, type Row} from '../../db/index.js'
import {writeEvent, type NewEvent} from '../../producer.js'
import {uuidv7} from '../../core/uuid.js'
import {failpoint} from '../../core/failpoints.js'
import {historyLine, type Note} from '../history.js'
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
  /** print a history line per operation (`--report`) */
  history?: boolean
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

async function producer(config: WorkerConfig, db: Db, scenario: Scenario, ctx: ScenarioContext, t: RunTables, note: Note): Promise<void> {
  // kysely only here: it is the slowest import, and relay and consumer do not need it
  const [kysely, {CompiledQuery}] = await Promise.all([db.kysely(), import('kysely')])
  const q = (trx: Transaction<any>) => kyselyQueryable(trx, db, CompiledQuery)
  const outbox = usesRelay(config.strategy)
  const publisher = outbox ? undefined : await openPublisher(config.broker, t.prefix)
  for (let op = config.opStart ?? 0; op < config.ops; op++) {
    say(`op ${op}`)
    const detail = `op ${op}`
    const fixedId = config.ids?.[String(op)]
    const withId = (e: NewEvent, i: number) => ({...e, id: i === 0 && fixedId ? fixedId : e.id ?? uuidv7()})
    const send = async (events: NewEvent[]) => {
      const ids = events.map((e) => e.id!)
      note({type: 'invoke', op: 'publish', ids})
      await publisher!.send(events)
      note({type: 'ok', op: 'publish', ids})
    }
    note({type: 'invoke', op: 'business', detail})
    try {
      if (outbox) {
        // The pattern: business row and event in one transaction.
        const ids = await kysely.transaction().execute(async (trx) => {
          const events = await scenario.write(q(trx), op, ctx)
          const written: string[] = []
          for (const [i, event] of events.entries()) written.push(await writeEvent(trx, {...event, id: i === 0 && fixedId ? fixedId : event.id}, {tables: t.outbox}))
          failpoint('producer.before-commit')
          return written
        })
        note({type: 'ok', op: 'business', detail, ids})
        failpoint('producer.after-commit')
      } else if (config.strategy === 'dual-write-commit-first') {
        // Broken on purpose: commit, then publish directly. A crash in between loses the event.
        const events = await kysely.transaction().execute(async (trx) => {
          const written = await scenario.write(q(trx), op, ctx)
          failpoint('producer.before-commit')
          return written.map(withId)
        })
        note({type: 'ok', op: 'business', detail, ids: events.map((e) => e.id)})
        failpoint('producer.after-commit')
        await send(events)
      } else {
        // Broken on purpose: publish, then commit. A crash in between leaves a phantom event.
        const ids = await kysely.transaction().execute(async (trx) => {
          const events = (await scenario.write(q(trx), op, ctx)).map(withId)
          await send(events)
          failpoint('producer.before-commit')
          return events.map((e) => e.id)
        })
        note({type: 'ok', op: 'business', detail, ids})
        failpoint('producer.after-commit')
      }
    } catch (error) {
      // going on after an error is for a COMMIT without an answer: the producer cannot know
      note({type: config.goOnAfterErrors ? 'unknown' : 'fail', op: 'business', detail: `${detail}: ${String((error as Error)?.message ?? error)}`})
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
  // queryTimeoutMs: a server that stops answering (a black hole, no reset) fails a statement, never hangs the worker
  const db = await openDb(config.url, {poolSize: 2, busyTimeoutMs: 10_000, queryTimeoutMs: 10_000})
  const t = runTables(config.prefix)
  const note: Note = config.history ? (entry) => say(historyLine(entry)) : () => {}
  if (config.role === 'relay') {
    await runRelay(config, db, t, say, note)
  } else {
    const {scenario} = await loadScenario(config.scenarioPath)
    const ctx = scenarioContext(db.dialect, config.prefix, config.ops)
    if (config.role === 'producer') await producer(config, db, scenario, ctx, t, note)
    else await runConsumer(config, db, scenario, ctx, t, say, note)
  }
  await db.close()
  process.exit(0)
}

main().catch((error: unknown) => {
  writeSync(2, `outbox-chaos-worker error: ${String((error as Error)?.stack ?? error)}\n`)
  process.exit(3)
})
