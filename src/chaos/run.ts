// One chaos run: scratch tables and a broker of its own, the fault armed, the workers watched
// until everything drained (watch.ts), then the invariants and the fault's own check.
import {randomBytes} from 'node:crypto'
import type {Db} from '../db/index.js'
import {LoopbackBroker} from './broker.js'
import {runHistory} from './run-history.js'
import {scenarioContext, type ScenarioContext} from './business-scenario.js'
import {checkInvariants, type Violation} from './invariants.js'
import {NOTHING_OBSERVED, verdictOf, type KillRecord, type RunResult} from './report.js'
import type {ConsumerPoll, Failpoint, FaultScenario, RelaySettings, RunUnderTest, Stage} from './scenarios/types.js'
import type {ChaosSession, Settings} from './session.js'
import {proxyFor, proxyForUrl, type FaultProxy} from './proxy/fault-proxy.js'
import {caseRng} from './seed.js'
import {usesRelay} from './strategies.js'
import {assertScratchNamesFree, dropRunTables, highestAttempts, makeRunTables, runTables, type RunTables} from './tables.js'
import {throwIfAborted} from './cleanup.js'
import {watch} from './watch.js'
import {PUBLISH_TIMEOUT_MS, type BrokerSpec} from './workers/transport.js'
import type {WorkerConfig} from './workers/worker.js'
import type {WorkerProcess} from './workers/worker-process.js'

/** the consumer's name: its inbox rows, and the queue's, durable's or group's where a broker names them after it */
const CONSUMER_NAME = 'chaos-inventory'
/**
 * The relays' lease: a relay killed mid-batch holds its events this long before another (or its
 * restart) sends them again. Short, as every kill of a relay waits it out; a lone relay never
 * competes for its own lapsed lease (it claims again only after its batch is settled), but
 * several do on a loaded machine, whose publishes take longer: they get a longer one.
 */
const LEASE_MS = {oneRelay: 300, several: 1000}
/** the loopback broker hands an unacknowledged message out again after this long (a consumer's failed transaction) */
const REDELIVER_MS = 1000

export interface Plan {
  fault: FaultScenario
  iteration: number
}

/** A run's scratch tables and broker, made before its turn comes (off its lane's clock), and how they go. */
export interface PreparedRun {
  tables: RunTables
  ctx: ScenarioContext
  ops: number
  loopback?: LoopbackBroker
  broker: BrokerSpec
  /** drops what was made (once, whoever calls it), and stops tracking it for an interruption */
  discard(): Promise<void>
}

/** Whether a plan runs at all under the session's strategy (a fault of the relay has none to fault without one). */
export function runsUnder(plan: Plan, session: ChaosSession): boolean {
  return usesRelay(session.settings.strategy) || !plan.fault.needsRelay
}

/** Makes a run's scratch tables and broker objects; on a failure what was made goes again. */
export async function prepareRun(plan: Plan, session: ChaosSession): Promise<PreparedRun> {
  const s = session.settings
  const prefix = `chaos_${randomBytes(3).toString('hex')}`
  const tables = runTables(prefix)
  const ops = s.scenario.ops(plan.fault.size?.(s.orders) ?? s.orders)
  const ctx = scenarioContext(s.db.dialect, prefix, ops)
  await assertScratchNamesFree(s.db, tables, s.scenario)
  const loopback = s.broker ? undefined : new LoopbackBroker({redeliverMs: REDELIVER_MS})
  const brokers = s.broker ? await import('./workers/transport-brokers.js') : undefined
  const broker: BrokerSpec = s.broker ?? {kind: 'loopback', url: await loopback!.start()}
  // scratch tables and broker objects go, whatever happens in the run (also on interruption)
  let cleaned: Promise<void> | undefined
  const cleanup = () =>
    (cleaned ??= (async () => {
      await loopback?.stop()
      if (!s.keep) {
        if (s.broker) await brokers?.cleanupBroker(s.broker, prefix).catch(() => {})
        await dropRunTables(s.db, tables, s.scenario)
      }
    })())
  // tracked before anything is made: a signal in the middle of the setup drops what it made
  const untrack = session.track(cleanup)
  // the drop goes on while the lane goes on; the session waits for it before closing
  const discard = () => {
    const dropped = cleanup().finally(untrack)
    session.cleanUpLater(dropped)
    return dropped.catch(() => {})
  }
  try {
    await makeRunTables(s.db, tables, s.scenario, ctx, s.partitionBy)
    throwIfAborted(s.signal)
    if (s.broker) await brokers?.prepareBroker(s.broker, prefix, CONSUMER_NAME)
    throwIfAborted(s.signal)
  } catch (error) {
    void discard()
    throw error
  }
  return {tables, ctx, ops, loopback, broker, discard}
}

/** One run, on the tables made for it (made now when none were given). */
export async function runOne(plan: Plan, session: ChaosSession, prepared?: PreparedRun): Promise<RunResult> {
  const s = session.settings
  const {fault} = plan
  const base = {case: fault.name, kind: fault.kind, iteration: plan.iteration}
  const relayless = !usesRelay(s.strategy)
  if (!runsUnder(plan, session)) {
    return {...base, ...NOTHING_OBSERVED, armed: [], kills: [], exercised: false, note: `strategy ${s.strategy} has no relay`, violations: [], verdict: 'not exercised', ms: 0}
  }
  const made = prepared ?? (await prepareRun(plan, session))
  // the run's clock (its ms, --run-timeout, the history) starts once its tables are there
  const started = Date.now()
  const {tables, ctx, ops, loopback, broker} = made
  try {
    const run = new Run(session, {started, tables, ctx, ops, loopback, broker, relays: relayless ? 0 : s.relays, caseName: fault.name, iteration: plan.iteration})
    const stage = fault.arm(run)
    await watch(run, stage)
    const result: RunResult = {...base, ...(await verdict(run, stage, relayless)), ms: Date.now() - started}
    // read before the scratch tables go: the database's side of the picture
    if (s.history) result.history = await runHistory(run)
    return result
  } finally {
    void made.discard()
  }
}

/** After the drain: the invariants on the database, then whether the fault happened. */
async function verdict(run: Run, stage: Stage, relayless: boolean): Promise<Omit<RunResult, 'case' | 'kind' | 'iteration' | 'ms'>> {
  const armed = [...run.failpoints].map(([name, a]) => `${name}: ${a.step}=kill@${a.hit}`)
  const {db, scenario} = run.settings
  const checked = await checkInvariants({
    db,
    tables: run.tables,
    scenario,
    ctx: run.ctx,
    broker: run.loopback ? {acceptedById: run.loopback.acceptedById, unacked: run.loopback.unacked().map((m) => m.event.id)} : undefined,
    expectFailed: run.expectFailed,
    outbox: !relayless,
  })
  const {missed, violations = []} = await stage.exercised({observed: checked.observed, kills: run.kills, armed})
  const all = [...run.violations, ...checked.violations, ...violations]
  return {...checked.observed, armed, kills: run.kills, exercised: !missed, note: missed, violations: all, verdict: verdictOf(all, !missed)}
}

interface RunParts {
  started: number
  tables: RunTables
  ctx: ScenarioContext
  ops: number
  loopback?: LoopbackBroker
  broker: BrokerSpec
  relays: number
  caseName: string
  iteration: number
}

/** One run's state, from arming to the verdict: what the fault sets, what the watch loop sees. */
export class Run implements RunUnderTest {
  readonly settings: Settings
  readonly started: number
  readonly tables: RunTables
  readonly ctx: ScenarioContext
  readonly loopback?: LoopbackBroker
  readonly failpoints = new Map<string, Failpoint>()
  readonly ids: Record<string, string> = {}
  readonly expectFailed = new Set<string>()
  relays: number
  /** this run's PRNG: the seed, the case and the iteration */
  readonly random: () => number
  readonly relay: RelaySettings
  /** a loaded machine's slow answer is not a hung broker: 2 s beyond the wait by default */
  readonly consumerPoll: ConsumerPoll = {waitMs: 1000, giveUpMs: 2000}
  readonly workers = new Map<string, WorkerProcess>()
  producerGoesOn = false
  /** the fault proxies of this run, and the URL each proxied worker uses */
  readonly proxies: FaultProxy[] = []
  private readonly proxiedUrls = new Map<string, string>()
  private readonly proxiedBrokers = new Map<string, BrokerSpec>()
  /** every worker process of the run, restarts included, in spawn order */
  readonly spawned: WorkerProcess[] = []
  readonly kills: KillRecord[] = []
  /** what the harness itself saw go wrong (a worker dying elsewhere, no drain) */
  readonly violations: Violation[] = []
  private readonly timers: NodeJS.Timeout[] = []

  constructor(
    private readonly session: ChaosSession,
    private readonly parts: RunParts,
  ) {
    this.settings = session.settings
    this.started = parts.started
    this.tables = parts.tables
    this.ctx = parts.ctx
    this.loopback = parts.loopback
    this.relays = parts.relays
    const leaseMs = parts.relays > 1 ? LEASE_MS.several : LEASE_MS.oneRelay
    this.relay = {batch: 2, leaseMs, publishTimeoutMs: PUBLISH_TIMEOUT_MS, pollMs: this.settings.relayPollMs, maxAttempts: 10, backoff: {baseMs: 50, capMs: 400}}
    this.random = caseRng(this.settings.seed, `${parts.caseName}#${parts.iteration}`)
  }

  get db(): Db {
    return this.settings.db
  }

  get iteration(): number {
    return this.parts.iteration
  }

  get ops(): number {
    return this.parts.ops
  }

  caseRandom(): () => number {
    return caseRng(this.settings.seed, this.parts.caseName)
  }

  highestAttempts(): Promise<number> {
    return highestAttempts(this.db, this.tables)
  }

  after(ms: number, fn: () => void): void {
    this.timers.push(setTimeout(fn, ms))
  }

  harness(message: string): void {
    this.violations.push({invariant: 'harness', message, count: 1, witnesses: []})
  }

  /** armed: null restarts the worker without failpoints (default: the one armed for its name) */
  spawn(name: string, extra: Partial<WorkerConfig> = {}, armed: Failpoint | null | undefined = this.failpoints.get(name)): void {
    if (this.settings.signal?.aborted) return
    const role = name.replace(/#.*$/, '') as WorkerConfig['role']
    const worker = this.session.workers.spawn(name, this.config(name, role, extra), armed ?? undefined, this.settings.history)
    this.workers.set(name, worker)
    this.spawned.push(worker)
  }

  async proxyDatabase(worker: string): Promise<FaultProxy> {
    const {wire} = this.db.dialect
    const via = wire && (await proxyFor(this.settings.url, wire))
    if (!via) throw new Error(`no fault proxy before ${this.db.safeUrl}: it needs a database server reached over TCP`)
    this.proxies.push(via.proxy)
    this.proxiedUrls.set(worker, via.url)
    return via.proxy
  }

  async proxyBroker(workers: string[], options: {readAcks?: boolean} = {}): Promise<FaultProxy> {
    const {kind, url} = this.parts.broker
    const via = await proxyForUrl(url, options.readAcks && kind !== 'loopback' ? kind : undefined)
    this.proxies.push(via.proxy)
    for (const worker of workers) this.proxiedBrokers.set(worker, {...this.parts.broker, url: via.url})
    return via.proxy
  }

  /** The run is over: no more timers, every worker stopped (SIGTERM, then SIGKILL), the proxies closed. */
  async stop(): Promise<void> {
    this.timers.forEach(clearTimeout)
    await Promise.all([...this.workers.values()].map((w) => w.stop(2000)))
    await Promise.all(this.proxies.map((p) => p.stop()))
  }

  private config(name: string, role: WorkerConfig['role'], extra: Partial<WorkerConfig>): WorkerConfig {
    const s = this.settings
    return {
      role,
      url: this.proxiedUrls.get(name) ?? s.url,
      goOnAfterErrors: role === 'producer' && this.producerGoesOn,
      prefix: this.tables.prefix,
      scenarioPath: s.scenarioPath,
      ops: this.parts.ops,
      ids: this.ids,
      strategy: s.strategy,
      consumerMode: s.consumer,
      consumerName: CONSUMER_NAME,
      broker: this.proxiedBrokers.get(name) ?? this.parts.broker,
      relay: {...this.relay, owner: `${role}-${randomBytes(3).toString('hex')}`, leaseBy: transactionLeaseFor(name)},
      consumerPoll: this.consumerPoll,
      history: s.history,
      ...extra,
    }
  }
}

/**
 * relay#2, #4, ... hold their batches by transaction where the dialect can (PostgreSQL), the
 * others by row lease: the two kinds share the outbox (concurrent-relays kills relay#2 at a
 * step). relay#1, which the scenarios' faults and the kill steps aim at, keeps the row lease
 * their checks count on (hang's retried attempt: a hung publish under the transaction lease
 * outlives the lease, the server ends the session, and no attempt is written).
 */
function transactionLeaseFor(name: string): 'transaction' | undefined {
  const k = Number(/^relay#(\d+)$/.exec(name)?.[1])
  return Number.isInteger(k) && k % 2 === 0 ? 'transaction' : undefined
}
