// `outbox chaos` as a library call: for every step (and scenario), spawn real producer, relay
// and consumer processes with a failpoint armed, watch the armed one die by SIGKILL at that
// step, restart it without failpoints, let everything drain, then check the invariants.
// This file is the loop: plan the runs, run each (run.ts), report progress, stop on the signal.
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {dialectOfUrl} from '../config.js'
import {openDb, type Db} from '../db/index.js'
import {busyCores, inLanes, LANES, lanesFor} from './lanes.js'
import {checkOptions, type ChaosOptions, type CheckedOptions} from './options.js'
import {summarise, totalsOf, type ChaosReport, type RunResult} from './report.js'
import {runOne, type Plan} from './run.js'
import {SetUpAhead} from './set-up-ahead.js'
import {CHAOS_DB_OPTIONS} from './tables.js'
import {killAtStep, scenarioByName} from './scenarios/index.js'
import {ChaosSession} from './session.js'

export {parseBrokerUrl, type ChaosOptions} from './options.js'
export type {CaseSummary, ChaosProgress, ChaosReport, KillRecord, RunResult, Verdict} from './report.js'
export {SCENARIOS, SCENARIO_DESCRIPTIONS, type ScenarioKind} from './scenarios/index.js'

/** runChaos was stopped through its signal; `done` runs had finished (no verdict for the rest). */
export class ChaosInterrupted extends Error {
  constructor(
    readonly done: number,
    readonly total: number,
  ) {
    super(`chaos interrupted after ${done} of ${total} run(s)`)
  }
}

export async function runChaos(options: ChaosOptions = {}): Promise<ChaosReport> {
  const started = Date.now()
  // sampled while the options are checked and the database opened (none asked for: no sample)
  const busy = options.lanes === undefined ? busyCores() : Promise.resolve(0)
  const checked = await checkOptions(options)
  let tempDir: string | undefined
  let url = options.url
  if (!url) {
    tempDir = mkdtempSync(join(tmpdir(), 'outbox-chaos-'))
    url = `sqlite:${join(tempDir, 'chaos.db')}`
  }
  const dialect = await dialectOfUrl(url)
  let db: Db
  try {
    db = await openDb(url, {...CHAOS_DB_OPTIONS, poolSize: 2 + (options.lanes ?? LANES)})
  } catch (error) {
    if (tempDir) rmSync(tempDir, {recursive: true, force: true})
    throw error
  }
  // every input is valid and the database answers: the run starts here
  options.onStart?.(checked.seed)
  const session = new ChaosSession({
    db,
    url,
    scenario: checked.scenario,
    scenarioPath: checked.scenarioPath,
    strategy: options.strategy ?? 'outbox',
    consumer: options.consumer ?? 'idempotent',
    relays: checked.relays,
    orders: checked.orders,
    broker: checked.broker,
    runTimeoutMs: options.runTimeoutMs ?? 30_000,
    relayPollMs: options.relayPollMs ?? 50,
    keep: options.keep ?? false,
    history: options.history ?? false,
    seed: checked.seed,
    partitionBy: options.partitionBy,
    signal: options.signal,
  })
  const plans = planRuns(checked)
  // in plan order, whatever order they finish in
  const results: (RunResult | undefined)[] = plans.map(() => undefined)
  const done = () => results.filter(Boolean).length
  const interrupted = abortion(options.signal)
  const lanes = Math.min(options.lanes ?? lanesFor(session.settings.strategy, plans.length, await busy), plans.length)
  session.workers.warm(lanes * WORKERS_PER_RUN, lanes)
  // the runs in progress: on interruption each ends the step it is in before its tables go
  const inFlight = new Set<Promise<RunResult>>()
  const startOrder = [...plans.keys()].sort((a, b) => weight(plans[b]) - weight(plans[a]) || a - b)
  const ahead = new SetUpAhead(plans, startOrder, session, lanes)
  try {
    if (options.signal?.aborted) throw new ChaosInterrupted(0, plans.length)
    const runAt = async (index: number) => {
      const plan = plans[index]
      const progress = {index, total: plans.length, case: plan.fault.name, iteration: plan.iteration}
      options.onProgress?.(progress)
      const running = ahead.take(index).then((prepared) => runOne(plan, session, prepared))
      inFlight.add(running)
      const run = await running.finally(() => inFlight.delete(running))
      results[index] = run
      options.onProgress?.({...progress, run})
    }
    await Promise.race([inLanes(startOrder, lanes, runAt, () => Boolean(options.signal?.aborted)), interrupted.promise])
    if (options.signal?.aborted) throw new ChaosInterrupted(done(), plans.length)
  } catch (error) {
    if (!options.signal?.aborted) throw error
    await session.abandon(Promise.allSettled([...inFlight, ...ahead.pending()]))
    throw new ChaosInterrupted(done(), plans.length)
  } finally {
    interrupted.dispose()
    await ahead.discardUnused()
    // every worker gone before the temporary SQLite file's directory goes
    await session.close()
    await db.close().catch(() => {})
    if (tempDir && !session.settings.keep) rmSync(tempDir, {recursive: true, force: true})
  }
  const runs = results as RunResult[]
  const totals = totalsOf(runs)
  const {settings} = session
  return {
    ok: totals.violations === 0 && totals.notExercised === 0,
    seed: checked.seed,
    dialect: dialect.name,
    database: tempDir ? (settings.keep ? `sqlite:${join(tempDir, 'chaos.db')} (kept)` : 'sqlite (temporary file)') : db.safeUrl,
    broker: checked.broker ? checked.broker.url.replace(/\/\/[^@/]*@/, '//***@') : 'loopback (http, in the harness)',
    strategy: settings.strategy,
    consumer: settings.consumer,
    scenario: checked.scenario.name,
    relays: checked.relays,
    iterations: checked.iterations,
    cases: summarise(runs),
    runs,
    totals,
    ms: Date.now() - started,
  }
}

/** Every step, then every scenario, each `iterations` times in a row. */
function planRuns({steps, iterations, scenarios}: CheckedOptions): Plan[] {
  const faults = [...steps.map(killAtStep), ...scenarios.map(scenarioByName)]
  return faults.flatMap((fault) => Array.from({length: iterations}, (_, i) => ({fault, iteration: i + 1})))
}

/** worker processes a run starts (consumer, relay, producer): what the pool warms per lane */
const WORKERS_PER_RUN = 3

/**
 * Longest first (longest-processing-time order): the lanes then end close together, no long run
 * left for the end. A run's expected length against a single kill's, from the scenario.
 */
function weight(plan: Plan): number {
  return plan.fault.length ?? 1
}

/** A promise that rejects when `signal` aborts (never, without one). */
function abortion(signal: AbortSignal | undefined): {promise: Promise<never>; dispose: () => void} {
  let onAbort = () => {}
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error('aborted'))
    signal?.addEventListener('abort', onAbort, {once: true})
  })
  promise.catch(() => {}) // rejected only while raced
  return {promise, dispose: () => signal?.removeEventListener('abort', onAbort)}
}
