// A chaos worker process: `node dist/src/chaos/workers/worker.js`, started ahead of need by the
// harness's pool (worker-process.ts) with every role's modules loaded, then given assignments
// one at a time on stdin. An assignment runs the project's own producer (writeEvent), relay
// (relay-worker.ts) or consumer runtime (consumer-worker.ts) against a run's scratch tables;
// an armed failpoint kills the whole process by SIGKILL mid-step (the pool starts another).
// Protocol on stdin, one line each: an Assignment's JSON, or "stop" (the graceful stop SIGTERM
// used to ask for: the role finishes what it holds and returns).
// Protocol on stdout, one line each: "idle" when waiting for an assignment, "ready", "op <n>"
// before business op n starts, "op-error <n>" when it failed and was passed over
// (goOnAfterErrors), "done", and with `history` set, "h {...}" per operation (../history.ts).
import {writeSync} from 'node:fs'
import {createInterface} from 'node:readline'
import type {CompiledQuery as CompiledQueryType, Transaction} from 'kysely'
import type {Sql} from '../../../dialects/index.js'
import {openDb, type Db, type Queryable, type Row} from '../../db/index.js'
import {writeEvent, type NewEvent} from '../../producer.js'
import {uuidv7} from '../../core/uuid.js'
import {armFailpoints, failpoint} from '../../core/failpoints.js'
import {historyLine, type Note} from '../history.js'
import {loadScenario, scenarioContext, type Scenario, type ScenarioContext} from '../business-scenario.js'
import {openPublisher, type BrokerSpec} from './transport.js'
import {CHAOS_DB_OPTIONS, runTables, type RunTables} from '../tables.js'
import {runConsumer} from './consumer-worker.js'
import {runRelay} from './relay-worker.js'
import {usesRelay, type ConsumerMode, type Strategy} from '../strategies.js'
import type {ConsumerPoll} from '../scenarios/types.js'

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
  relay: {batch: number; leaseMs: number; publishTimeoutMs: number; pollMs: number; maxAttempts: number; backoff: {baseMs: number; capMs: number}; owner: string; leaseBy?: 'transaction'}
  /** the consumer's long poll of the loopback broker */
  consumerPoll?: ConsumerPoll
  /** print a history line per operation (`--report`) */
  history?: boolean
}

/** One line on a pooled worker's stdin: the role to run, and the failpoint it runs with (OUTBOX_FAILPOINTS's syntax). */
export interface Assignment {
  config: WorkerConfig
  failpoints?: string
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

async function producer(config: WorkerConfig, db: Db, scenario: Scenario, ctx: ScenarioContext, t: RunTables, note: Note, stop: AbortSignal): Promise<void> {
  // kysely only here: it is the slowest import, and relay and consumer do not need it
  const [kysely, {CompiledQuery}] = await Promise.all([db.kysely(), import('kysely')])
  const q = (trx: Transaction<any>) => kyselyQueryable(trx, db, CompiledQuery)
  const outbox = usesRelay(config.strategy)
  const publisher = outbox ? undefined : await openPublisher(config.broker, t.prefix)
  for (let op = config.opStart ?? 0; op < config.ops && !stop.aborted; op++) {
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

/** One assignment, from opening its database to closing it; the process stays for the next one. */
async function run({config, failpoints}: Assignment, stop: AbortSignal): Promise<void> {
  armFailpoints(failpoints)
  // queryTimeoutMs: a server that stops answering (a black hole, no reset) fails a statement, never hangs the worker
  const db = await openDb(config.url, {...CHAOS_DB_OPTIONS, poolSize: 2, queryTimeoutMs: 10_000})
  try {
    const t = runTables(config.prefix)
    const note: Note = config.history ? (entry) => say(historyLine(entry)) : () => {}
    if (config.role === 'relay') {
      await runRelay(config, db, t, say, note, stop)
    } else {
      const {scenario} = await loadScenario(config.scenarioPath)
      const ctx = scenarioContext(db.dialect, config.prefix, config.ops)
      if (config.role === 'producer') await producer(config, db, scenario, ctx, t, note, stop)
      else await runConsumer(config, db, scenario, ctx, t, say, note, stop)
    }
  } finally {
    armFailpoints(undefined)
    await db.close().catch(() => {})
  }
}

/**
 * Every role's modules, loaded while the process waits for its first assignment; but Kysely (half
 * a worker's start-up CPU) only in processes the pool started for producers, or once one ran a
 * producer: the pool gives producers those processes (worker-process.ts).
 */
async function preload(url: string | undefined): Promise<void> {
  const producer = process.env.OUTBOX_CHAOS_PRELOAD_KYSELY ? import('kysely') : undefined
  await Promise.all([import('../../relay/relay.js'), import('../../publishers/index.js'), import('./loopback-source.js'), loadScenario(undefined), producer])
  // the dialect and its driver package, through a connection opened and closed at once
  if (url) await openDb(url, {...CHAOS_DB_OPTIONS, poolSize: 1}).then((db) => db.close()).catch(() => {})
}

async function main(): Promise<void> {
  // orphaned (the harness died without killing us): stop rather than run forever
  const parent = process.ppid
  setInterval(() => process.ppid !== parent && process.exit(0), 500).unref()
  await preload(process.env.OUTBOX_CHAOS_PRELOAD_URL)
  let current: AbortController | undefined
  let leaving = false
  // SIGTERM or the end of stdin (the pool closed): the assignment stops gracefully, then the process goes
  const leave = () => {
    leaving = true
    if (current) current.abort()
    else process.exit(0)
  }
  process.on('SIGTERM', leave)
  const lines = createInterface({input: process.stdin})
  lines.on('close', leave)
  lines.on('line', (line) => {
    if (line === 'stop') return current?.abort()
    if (current) return crash(new Error('an assignment came while another one runs'))
    const stop = (current = new AbortController())
    run(JSON.parse(line) as Assignment, stop.signal).then(() => {
      current = undefined
      if (leaving) process.exit(0)
      say('idle')
    }, crash)
  })
  say('idle')
}

function crash(error: unknown): never {
  writeSync(2, `outbox-chaos-worker error: ${String((error as Error)?.stack ?? error)}\n`)
  process.exit(3)
}

main().catch(crash)
