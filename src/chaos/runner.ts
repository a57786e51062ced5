// `outbox chaos` as a library call: for every step (and scenario), spawn real producer, relay
// and consumer processes with a failpoint armed, watch the armed one die by SIGKILL at that
// step, restart it without failpoints, let everything drain, then check the invariants.
import {randomBytes, randomUUID} from 'node:crypto'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {sql, type DialectName} from '../../dialects/index.js'
import {dialectOfUrl} from '../config.js'
import {openDb, type Db} from '../db/index.js'
import {UsageError} from '../core/errors.js'
import {readStatus} from '../ops/status.js'
import {LoopbackBroker} from './broker.js'
import {STEPS, type ChaosStep as Step} from '../core/failpoints.js'
import {checkInvariants, type Observed, type Violation} from './invariants.js'
import {loadScenario, scenarioContext, type Scenario, type ScenarioContext} from './scenario.js'
import {pick, randomSeed, rng} from './seed.js'
import {usesRelay, type ConsumerMode, type Strategy} from './strategies.js'
import {createRunTables, dropRunTables, runTables, tableRef, type RunTables} from './tables.js'
import type {BrokerSpec} from './transport.js'
import type {WorkerConfig} from './worker.js'
import {classifyExit, killWorkers, WorkerProcess} from './workers.js'

export const SCENARIOS = ['broker-down', 'out-of-order', 'poison', 'concurrent-relays'] as const
export type ScenarioKind = (typeof SCENARIOS)[number]

/** staged by the harness's own broker (outage, reordering, rejection) */
const LOOPBACK_ONLY: readonly ScenarioKind[] = ['broker-down', 'out-of-order', 'poison']

export const SCENARIO_DESCRIPTIONS: Record<ScenarioKind, string> = {
  'broker-down': 'broker refuses connections, then answers 503, then recovers: delayed retry, everything delivered once',
  'out-of-order': 'the broker hands out newer versions of an aggregate first: stale versions detected, not applied',
  poison: 'the broker rejects one event every time: it ends failed after max attempts and blocks nothing else',
  'concurrent-relays': 'several relays on one table, two of them killed mid-batch',
}

export interface ChaosOptions {
  /** default: a SQLite file in a temporary directory */
  url?: string
  steps?: readonly Step[]
  /** scenarios beyond kills (default all; [] for none) */
  scenarios?: readonly ScenarioKind[]
  /** runs per step (default 1) */
  iterations?: number
  seed?: number
  strategy?: Strategy
  consumer?: ConsumerMode
  /** relay processes in every run (default 1; the concurrent-relays scenario uses at least 3) */
  relays?: number
  /** business size per run: orders for the built-in scenario (default 3) */
  orders?: number
  /** path of a scenario module (default: the built-in orders scenario) */
  scenarioPath?: string
  /** amqp:// or nats:// broker URL (default: the harness's loopback broker) */
  broker?: string
  /** give up on one run's drain after this long (default 30 s) */
  runTimeoutMs?: number
  /** keep the scratch tables (and the SQLite file) for inspection */
  keep?: boolean
  onProgress?: (progress: ChaosProgress) => void
  /** called once the options are valid and the database answers, before the first run */
  onStart?: (seed: number) => void
  /**
   * abort to stop: the run in progress is abandoned, its workers killed and its scratch tables
   * (and broker objects) dropped; runChaos then rejects with ChaosInterrupted
   */
  signal?: AbortSignal
}

/** runChaos was stopped through its signal; `done` runs had finished (no verdict for the rest). */
export class ChaosInterrupted extends Error {
  constructor(
    readonly done: number,
    readonly total: number,
  ) {
    super(`chaos interrupted after ${done} of ${total} run(s)`)
  }
}

// cleanups of runs in progress, run on interruption (a run's own finally cannot be awaited then)
const inFlight = new Set<() => Promise<void>>()

export interface ChaosProgress {
  index: number
  total: number
  case: string
  iteration: number
  /** undefined when the run is starting */
  run?: RunResult
}

export type Verdict = 'pass' | 'fail' | 'not exercised'

export interface KillRecord {
  worker: string
  step: string
  signal: string
  /** died by SIGKILL at the armed step */
  ok: boolean
}

export interface RunResult extends Observed {
  case: string
  kind: 'step' | 'scenario'
  iteration: number
  /** the armed failpoints, e.g. relay.after-send=kill@2 */
  armed: string[]
  kills: KillRecord[]
  exercised: boolean
  /** why it was not exercised */
  note?: string
  violations: Violation[]
  verdict: Verdict
  ms: number
}

export interface CaseSummary extends Observed {
  case: string
  kind: 'step' | 'scenario'
  runs: number
  kills: number
  exercised: number
  verdict: Verdict
  violations: Violation[]
  notes: string[]
}

export interface ChaosReport {
  ok: boolean
  seed: number
  dialect: DialectName
  /** the URL with its password masked; "sqlite (temporary file)" by default */
  database: string
  broker: string
  strategy: Strategy
  consumer: ConsumerMode
  scenario: string
  relays: number
  iterations: number
  cases: CaseSummary[]
  runs: RunResult[]
  totals: {runs: number; kills: number; violations: number; notExercised: number}
  ms: number
}

interface Plan {
  case: string
  kind: 'step' | 'scenario'
  step?: Step
  scenario?: ScenarioKind
  iteration: number
}

interface Settings {
  db: Db
  url: string
  scenario: Scenario
  scenarioPath?: string
  strategy: Strategy
  consumer: ConsumerMode
  relays: number
  orders: number
  broker?: BrokerSpec
  runTimeoutMs: number
  keep: boolean
  random: () => number
  /** runChaos's signal: an abandoned run stops spawning workers and ends */
  signal?: AbortSignal
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const RELAY_STEPS = STEPS.filter((s) => s.startsWith('relay.'))

export function parseBrokerUrl(url: string | undefined): BrokerSpec | undefined {
  if (!url || url === 'loopback') return undefined
  if (/^amqps?:\/\//i.test(url)) return {kind: 'amqp', url}
  if (/^nats:\/\//i.test(url)) return {kind: 'nats', url}
  throw new UsageError(`unsupported --broker ${JSON.stringify(url.replace(/\/\/[^@/]*@/, '//***@'))}`, 'Use amqp://... (RabbitMQ) or nats://... (JetStream), or omit it for the loopback broker')
}

export async function runChaos(options: ChaosOptions = {}): Promise<ChaosReport> {
  const started = Date.now()
  const seed = options.seed ?? randomSeed()
  const steps = options.steps ?? STEPS
  const iterations = options.iterations ?? 1
  const relays = options.relays ?? 1
  const orders = options.orders ?? 3
  for (const [name, value, min] of [['iterations', iterations, 1], ['relays', relays, 1], ['orders', orders, 1]] as const) {
    if (!Number.isSafeInteger(value) || value < min) throw new UsageError(`--${name} must be a whole number >= ${min} (got ${value})`, `Pass e.g. --${name} 2`)
  }
  const unknown = steps.filter((s) => !STEPS.includes(s))
  if (unknown.length) throw new UsageError(`unknown step ${unknown.join(', ')}`, `Steps: ${STEPS.join(', ')}`)
  const broker = parseBrokerUrl(options.broker)
  // outages, reordering and poison are staged by the loopback broker; a real one runs the rest
  const scenarios = options.scenarios ?? (broker ? SCENARIOS.filter((x) => !LOOPBACK_ONLY.includes(x)) : SCENARIOS)
  const needLoopback = broker ? scenarios.filter((x) => LOOPBACK_ONLY.includes(x)) : []
  if (needLoopback.length) throw new UsageError(`scenario ${needLoopback.join(', ')} needs the loopback broker, not --broker`, 'Drop --broker for it, or choose --scenarios concurrent-relays')
  const {scenario, path: scenarioPath} = await loadScenario(options.scenarioPath)

  if (options.url) {
    dialectOfUrl(options.url)
    if (/^sqlite3?::memory:/.test(options.url)) throw new UsageError('chaos needs a database its worker processes share', 'Use a file (sqlite:./chaos.db) or omit --url')
  }
  let tempDir: string | undefined
  let url = options.url
  if (!url) {
    tempDir = mkdtempSync(join(tmpdir(), 'outbox-chaos-'))
    url = `sqlite:${join(tempDir, 'chaos.db')}`
  }
  const dialect = dialectOfUrl(url)
  let db: Db
  try {
    db = await openDb(url, {poolSize: 2, busyTimeoutMs: 10_000})
  } catch (error) {
    if (tempDir) rmSync(tempDir, {recursive: true, force: true})
    throw error
  }
  // every input is valid and the database answers: the run starts here
  options.onStart?.(seed)
  const settings: Settings = {
    db,
    url,
    scenario,
    scenarioPath,
    strategy: options.strategy ?? 'outbox',
    consumer: options.consumer ?? 'idempotent',
    relays,
    orders,
    broker,
    runTimeoutMs: options.runTimeoutMs ?? 30_000,
    keep: options.keep ?? false,
    random: rng(seed),
    signal: options.signal,
  }
  const plans: Plan[] = []
  for (const step of steps) for (let i = 1; i <= iterations; i++) plans.push({case: step, kind: 'step', step, iteration: i})
  for (const s of scenarios) plans.push({case: s, kind: 'scenario', scenario: s, iteration: 1})

  const runs: RunResult[] = []
  const interrupted = abortion(options.signal)
  try {
    for (const [index, plan] of plans.entries()) {
      if (options.signal?.aborted) throw new ChaosInterrupted(runs.length, plans.length)
      options.onProgress?.({index, total: plans.length, case: plan.case, iteration: plan.iteration})
      const run = await Promise.race([runOne(plan, settings), interrupted.promise])
      runs.push(run)
      options.onProgress?.({index, total: plans.length, case: plan.case, iteration: plan.iteration, run})
    }
  } catch (error) {
    if (!options.signal?.aborted) throw error
    killWorkers()
    await Promise.all([...inFlight].map((cleanup) => cleanup().catch(() => {})))
    throw new ChaosInterrupted(runs.length, plans.length)
  } finally {
    interrupted.dispose()
    await db.close().catch(() => {})
    if (tempDir && !settings.keep) rmSync(tempDir, {recursive: true, force: true})
  }
  const cases = summarise(runs)
  const violations = runs.reduce((n, r) => n + r.violations.length, 0)
  const notExercised = runs.filter((r) => !r.exercised).length
  return {
    ok: violations === 0 && notExercised === 0,
    seed,
    dialect: dialect.name,
    database: tempDir ? (settings.keep ? `sqlite:${join(tempDir, 'chaos.db')} (kept)` : 'sqlite (temporary file)') : db.safeUrl,
    broker: broker ? broker.url.replace(/\/\/[^@/]*@/, '//***@') : 'loopback (http, in the harness)',
    strategy: settings.strategy,
    consumer: settings.consumer,
    scenario: scenario.name,
    relays,
    iterations,
    cases,
    runs,
    totals: {runs: runs.length, kills: runs.reduce((n, r) => n + r.kills.filter((k) => k.ok).length, 0), violations, notExercised},
    ms: Date.now() - started,
  }
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

function summarise(runs: RunResult[]): CaseSummary[] {
  const byCase = new Map<string, RunResult[]>()
  for (const r of runs) byCase.set(r.case, [...(byCase.get(r.case) ?? []), r])
  return [...byCase].map(([name, rs]) => {
    const sum = (f: (r: RunResult) => number) => rs.reduce((n, r) => n + f(r), 0)
    const violations = rs.flatMap((r) => r.violations)
    const notes = [...new Set(rs.map((r) => r.note).filter((n): n is string => !!n))]
    return {
      case: name,
      kind: rs[0].kind,
      runs: rs.length,
      kills: sum((r) => r.kills.filter((k) => k.ok).length),
      exercised: rs.filter((r) => r.exercised).length,
      committed: sum((r) => r.committed),
      aggregates: sum((r) => r.aggregates),
      events: sum((r) => r.events),
      deliveries: sum((r) => r.deliveries),
      duplicateDeliveries: sum((r) => r.duplicateDeliveries),
      duplicateEffects: sum((r) => r.duplicateEffects),
      lost: sum((r) => r.lost),
      phantom: sum((r) => r.phantom),
      stuck: sum((r) => r.stuck),
      stale: sum((r) => r.stale),
      failed: sum((r) => r.failed),
      maxAttempts: Math.max(0, ...rs.map((r) => r.maxAttempts)),
      verdict: violations.length ? 'fail' : rs.every((r) => r.exercised) ? 'pass' : 'not exercised',
      violations,
      notes,
    }
  })
}

const EMPTY: Observed = {committed: 0, aggregates: 0, events: 0, deliveries: 0, duplicateDeliveries: 0, duplicateEffects: 0, lost: 0, phantom: 0, stuck: 0, stale: 0, failed: 0, maxAttempts: 0}

async function runOne(plan: Plan, s: Settings): Promise<RunResult> {
  const started = Date.now()
  const base = {case: plan.case, kind: plan.kind, iteration: plan.iteration}
  const relayless = !usesRelay(s.strategy)
  if (relayless && (plan.step?.startsWith('relay.') || plan.kind === 'scenario')) {
    return {...base, ...EMPTY, armed: [], kills: [], exercised: false, note: `strategy ${s.strategy} has no relay`, violations: [], verdict: 'not exercised', ms: 0}
  }
  const prefix = `chaos_${randomBytes(3).toString('hex')}`
  const t = runTables(prefix)
  // concurrent relays need enough events for every relay to claim some
  const ops = s.scenario.ops(plan.scenario === 'concurrent-relays' ? s.orders * 4 : s.orders)
  const ctx = scenarioContext(s.db.dialect, prefix, ops)
  await createRunTables(s.db, t, s.scenario, ctx)
  const loopback = s.broker ? undefined : new LoopbackBroker({redeliverMs: 1500})
  const brokers = s.broker ? await import('./transport-brokers.js') : undefined
  const brokerSpec: BrokerSpec = s.broker ?? {kind: 'loopback', url: await loopback!.start()}
  // scratch tables and broker objects go, whatever happens in the run (also on interruption)
  let cleaned: Promise<void> | undefined
  const cleanup = () =>
    (cleaned ??= (async () => {
      await loopback?.stop()
      if (!s.keep) {
        await brokers?.cleanupBroker(brokerSpec, prefix).catch(() => {})
        await dropRunTables(s.db, t, s.scenario)
      }
    })())
  inFlight.add(cleanup)
  try {
    await brokers?.prepareBroker(brokerSpec, prefix)
    return await drive({plan, s, t, ctx, prefix, ops, relayless, loopback, brokerSpec, started, base})
  } finally {
    await cleanup()
    inFlight.delete(cleanup)
  }
}

interface Drive {
  plan: Plan
  s: Settings
  t: RunTables
  ctx: ScenarioContext
  prefix: string
  ops: number
  relayless: boolean
  loopback?: LoopbackBroker
  brokerSpec: BrokerSpec
  started: number
  base: Pick<RunResult, 'case' | 'kind' | 'iteration'>
}

/** One run once its tables and broker exist: arm, spawn, watch, restart, drain, check. */
async function drive({plan, s, t, ctx, prefix, ops, relayless, loopback, brokerSpec, started, base}: Drive): Promise<RunResult> {
  const relaySettings = {batch: 2, leaseMs: 1000, pollMs: 50, maxAttempts: 10, backoff: {baseMs: 50, capMs: 400}}
  const ids: Record<string, string> = {}
  const expectFailed = new Set<string>()
  const violations: Violation[] = []
  const harness = (message: string, witnesses: string[] = []) => violations.push({invariant: 'harness', message, count: 1, witnesses})
  let relayCount = relayless ? 0 : s.relays
  const arming = new Map<string, {step: Step; hit: number}>()

  if (plan.step) {
    const role = plan.step.split('.')[0]
    const hit = pick(s.random, 1, 2)
    arming.set(role === 'relay' ? 'relay#1' : role, {step: plan.step, hit})
  } else if (plan.scenario === 'concurrent-relays') {
    relayCount = Math.max(3, s.relays)
    const first = RELAY_STEPS[pick(s.random, 0, RELAY_STEPS.length - 1)]
    const others = RELAY_STEPS.filter((x) => x !== first)
    arming.set('relay#1', {step: first, hit: 1})
    arming.set('relay#2', {step: others[pick(s.random, 0, others.length - 1)], hit: pick(s.random, 1, 2)})
  } else if (plan.scenario === 'poison') {
    const id = randomUUID()
    ids['0'] = id
    expectFailed.add(id)
    loopback?.reject(id)
    relaySettings.maxAttempts = 3
  } else if (plan.scenario === 'broker-down') {
    relaySettings.maxAttempts = 1000
    relaySettings.backoff = {baseMs: 100, capMs: 300}
  } else if (plan.scenario === 'out-of-order') {
    loopback?.hold()
  }

  const config = (role: WorkerConfig['role'], extra: Partial<WorkerConfig> = {}): WorkerConfig => ({
    role,
    url: s.url,
    prefix,
    scenarioPath: s.scenarioPath,
    ops,
    ids,
    strategy: s.strategy,
    consumerMode: s.consumer,
    consumerName: 'chaos-inventory',
    broker: brokerSpec,
    relay: {...relaySettings, owner: `${role}-${randomBytes(3).toString('hex')}`},
    ...extra,
  })
  const workers = new Map<string, WorkerProcess>()
  /** armed: null restarts the worker without failpoints */
  const spawnWorker = (name: string, extra: Partial<WorkerConfig> = {}, armed: {step: Step; hit: number} | null | undefined = arming.get(name)) => {
    if (s.signal?.aborted) return
    const role = name.replace(/#.*$/, '') as WorkerConfig['role']
    workers.set(name, new WorkerProcess(name, config(role, extra), armed ?? undefined))
  }
  const kills: KillRecord[] = []
  let producerDone = false
  let drained = false
  let aborted = false
  const timers: NodeJS.Timeout[] = []
  try {
    // broker-down: connections refused from the start until 500 ms after the first business
    // op began, then 503s for at least 500 ms and until the relay has been answered 503, then back
    const outage: {phase: 'refused' | 'starting' | '503' | 'over'; since: number} = {phase: plan.scenario === 'broker-down' ? 'refused' : 'over', since: 0}
    if (outage.phase === 'refused') await loopback!.stop()
    spawnWorker('consumer')
    for (let i = 1; i <= relayCount; i++) spawnWorker(`relay#${i}`)
    if (plan.scenario === 'concurrent-relays') {
      // every relay polling before the first event, so they really compete
      const until = Date.now() + 15_000
      while ([...workers.values()].some((w) => w.alive && !w.ready) && Date.now() < until) await sleep(20)
    }
    spawnWorker('producer')

    const deadline = started + s.runTimeoutMs
    let settledSince = 0
    while (!aborted) {
      await sleep(40)
      if (s.signal?.aborted) throw new Error('chaos interrupted')
      for (const [name, w] of workers) {
        if (w.alive || (name === 'producer' && producerDone)) continue
        const exit = w.exit!
        const kind = classifyExit(exit, w.armed)
        settledSince = 0
        if (kind === 'finished' && name === 'producer' && w.done) {
          producerDone = true
          continue
        }
        if (kind === 'killed-at-step' || kind === 'killed-elsewhere') {
          kills.push({worker: name, step: exit.failpoint ?? '(none)', signal: exit.signal ?? '', ok: kind === 'killed-at-step'})
          if (kind === 'killed-elsewhere') harness(`${name} died by SIGKILL ${exit.failpoint ? `at ${exit.failpoint}` : 'without a failpoint line'}, not at the armed ${w.armed?.step ?? '(none)'}`)
          // recovery: the same worker again, without failpoints
          if (name === 'consumer') loopback?.requeueUnacked()
          spawnWorker(name, name === 'producer' ? {opStart: (w.lastOp ?? -1) + 1} : {}, null)
          continue
        }
        harness(`${name} exited unexpectedly (${exit.signal ?? `code ${exit.code}`}): ${w.stderrTail()}`)
        aborted = true
      }
      if (aborted) break
      if (outage.phase === 'refused' && workers.get('producer')?.lastOp !== undefined) {
        outage.phase = 'starting'
        timers.push(
          setTimeout(() => {
            loopback!.setUnavailable(true)
            void loopback!.start().then(() => Object.assign(outage, {phase: '503', since: Date.now()}))
          }, 500),
        )
      } else if (outage.phase === '503' && Date.now() - outage.since >= 500 && loopback!.stats.rejected > 0) {
        outage.phase = 'over'
        loopback!.setUnavailable(false)
      }
      if (!producerDone) {
        if (Date.now() > deadline) break
        continue
      }
      const pending = await countPending(s.db, t)
      if (loopback && plan.scenario === 'out-of-order' && pending === 0) loopback.release({reverse: true})
      const quiet = pending === 0 && (loopback ? loopback.idle() : await allSettled(s.db, t))
      if (!quiet) settledSince = 0
      else if (!settledSince) settledSince = Date.now()
      // stay quiet a moment: a kill right after the last mark must not be missed, and a real
      // broker's redelivery (NATS ack wait 1.5 s) must have come back
      else if (Date.now() - settledSince >= (loopback ? 200 : 2000)) {
        drained = true
        break
      }
      if (Date.now() > deadline) break
    }
  } finally {
    timers.forEach(clearTimeout)
    await Promise.all([...workers.values()].map((w) => w.stop(2000)))
  }
  if (!drained && !aborted) harness(`did not drain within ${Math.round(s.runTimeoutMs / 1000)} s`)

  const armedList = [...arming].map(([name, a]) => `${name}: ${a.step}=kill@${a.hit}`)
  const checked = await checkInvariants({
    db: s.db,
    tables: t,
    scenario: s.scenario,
    ctx,
    broker: loopback ? {acceptedById: loopback.acceptedById, unacked: loopback.unacked().map((m) => m.event.id)} : undefined,
    expectFailed,
    outbox: !relayless,
  })
  violations.push(...checked.violations)

  let exercised = true
  let note: string | undefined
  if (arming.size > 0) {
    const fired = kills.filter((k) => k.ok).length
    if (fired === 0) {
      exercised = false
      note = `failpoint never fired (${armedList.join('; ')})`
    }
  } else if (plan.scenario === 'broker-down' && checked.observed.maxAttempts < 2) {
    exercised = false
    note = 'no publish was retried: the outage was missed'
  } else if (plan.scenario === 'out-of-order' && checked.observed.stale === 0) {
    exercised = false
    note = 'no stale version reached the consumer'
  } else if (plan.scenario === 'poison') {
    const [row] = await s.db.query<{attempts: unknown; failed_at: unknown}>(
      sql`SELECT attempts, failed_at FROM ${tableRef(s.db.dialect, t.outbox.outbox)} WHERE id = ${ids['0']}`,
    )
    if (!row) {
      exercised = false
      note = 'the poison event was never committed'
    } else if (row.failed_at != null && Number(row.attempts) !== relaySettings.maxAttempts) {
      violations.push({invariant: 'nothing-stuck', message: `the poison message failed after ${row.attempts} attempts, not max attempts (${relaySettings.maxAttempts})`, count: 1, witnesses: [ids['0']]})
    } else if (row.failed_at != null) {
      // and `outbox status` sees it: the same figures the command prints
      const {failed} = await readStatus(s.db, t.outbox, {windowMs: 60_000})
      if (failed !== 1) {
        violations.push({invariant: 'nothing-stuck', message: `outbox status reports ${failed} failed events, expected the poison message only`, count: 1, witnesses: [ids['0']]})
      }
    }
  }
  return {
    ...base,
    ...checked.observed,
    armed: armedList,
    kills,
    exercised,
    note,
    violations,
    verdict: violations.length ? 'fail' : exercised ? 'pass' : 'not exercised',
    ms: Date.now() - started,
  }
}

async function countPending(db: Db, t: RunTables): Promise<number> {
  const [row] = await db.query<{n: unknown}>(
    sql`SELECT COUNT(*) AS n FROM ${tableRef(db.dialect, t.outbox.outbox)} WHERE published_at IS NULL AND failed_at IS NULL`,
  )
  return Number(row.n)
}

/** Real brokers: every published event has a handled delivery (the caller then waits for quiet). */
async function allSettled(db: Db, t: RunTables): Promise<boolean> {
  const d = db.dialect
  const [row] = await db.query<{n: unknown}>(sql`SELECT COUNT(*) AS n FROM ${tableRef(d, t.outbox.outbox)} e WHERE e.published_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM ${tableRef(d, t.deliveries)} x WHERE x.event_id = CAST(e.id AS CHAR(36)) AND x.outcome <> 'received')`)
  return Number(row.n) === 0
}

