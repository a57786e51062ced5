// A fault a chaos run stages: a kill at one step, or a scenario beyond kills (broker down,
// out-of-order delivery, a poison message, concurrent relays). Each is one object: how it arms
// a run, the state machine it drives while the run goes, and how it knows it was exercised.
import type {ChaosStep} from '../../core/failpoints.js'
import type {Db} from '../../db/index.js'
import type {LoopbackBroker} from '../broker.js'
import type {FaultProxy} from '../proxy/fault-proxy.js'
import type {Observed, Violation} from '../invariants.js'
import type {KillRecord} from '../report.js'
import type {RunTables} from '../tables.js'

export interface FaultScenario<Name extends string = string> {
  /** the report's case: a step name, or the scenario's name for --scenarios */
  readonly name: Name
  readonly description: string
  readonly kind: 'step' | 'scenario'
  /** staged by the harness's own broker (outage, reordering, rejection): refused with --broker */
  readonly loopbackOnly: boolean
  /** faults the relay or needs it to show: "not exercised" under a dual-write strategy */
  readonly needsRelay: boolean
  /** cuts database connections through the fault proxy: only on a database with a server (dialect.wire) */
  readonly needsServer?: boolean
  /** the --orders size a run of it uses (default: --orders as given) */
  size?(orders: number): number
  /**
   * How long a run of it takes against a single kill's (about 1): the lanes start the longest
   * first (runner.ts), so that no long run is left to start last. Default 1.
   */
  readonly length?: number
  /** Arms one run before its workers start and returns that run's stage (its per-run state). */
  arm(run: RunUnderTest): Stage
}

/** A failpoint one worker starts with: it SIGKILLs itself on the hit-th pass through step. */
export interface Failpoint {
  step: ChaosStep
  hit: number
}

/** What every relay worker of a run is started with. */
export interface RelaySettings {
  batch: number
  leaseMs: number
  /** the relay gives up on a publish after this long (its publisher's timeout, whatever the broker) */
  publishTimeoutMs: number
  pollMs: number
  maxAttempts: number
  backoff: {baseMs: number; capMs: number}
}

/** How the consumer asks the loopback broker for its next message, and how long a real broker may stay silent. */
export interface ConsumerPoll {
  /** the broker holds a request this long when it has nothing */
  waitMs: number
  /** beyond the wait: a request unanswered by then is given up on (the broker is hung) and asked again */
  giveUpMs: number
  /**
   * with --broker: the consumer runtime's timeoutMs (connect; RabbitMQ heartbeats, NATS and Redis
   * pings at half of it): a silent connection is given up on after about that long (default: the runtime's)
   */
  brokerTimeoutMs?: number
}

/** The harness's view of a worker process. */
export interface WorkerView {
  readonly alive: boolean
  /** polling (relay) or listening (consumer) */
  readonly ready: boolean
  /** the business op the producer is in */
  readonly lastOp?: number
  /** business ops that failed and were passed over (producer started with goOnAfterErrors) */
  readonly opErrors: number
}

/** One run as a fault sees it: what it may set in arm(), what its stage may read later. */
export interface RunUnderTest {
  readonly db: Db
  readonly tables: RunTables
  /** this run's seeded PRNG (seed, case and iteration): the same --seed arms the same hits */
  readonly random: () => number
  /** 1-based: which run of its case this is (--iterations) */
  readonly iteration: number
  /**
   * a fresh PRNG of the case (seed and case name), the same stream in every iteration: give it
   * to choiceFor (seed.ts) so that each iteration takes a different kill point
   */
  caseRandom(): () => number
  /** business operations the producer runs */
  readonly ops: number
  /** the harness's broker; undefined with --broker */
  readonly loopback?: LoopbackBroker
  /** worker name (producer, consumer, relay#1, relay#2, ...) -> the failpoint it starts with */
  readonly failpoints: Map<string, Failpoint>
  /** the producer's event id for op n's first event, keyed by String(n) */
  readonly ids: Record<string, string>
  /** events that must end failed: not counted as lost or stuck */
  readonly expectFailed: Set<string>
  /** relay processes the run starts */
  relays: number
  readonly relay: RelaySettings
  /** what the consumer worker is started with (the loopback broker's poll; a real broker's timeout) */
  readonly consumerPoll: ConsumerPoll
  /** the run's workers by name, as spawned so far */
  readonly workers: ReadonlyMap<string, WorkerView>
  /** the highest attempts on any event of the run's outbox, read now */
  highestAttempts(): Promise<number>
  /** calls fn after ms, unless the run has ended by then */
  after(ms: number, fn: () => void): void
  /**
   * Puts a fault proxy (proxy/fault-proxy.ts) between the worker of this name and the database
   * server; call it before the worker starts (in stage.start). Stopped when the run ends.
   */
  proxyDatabase(worker: string): Promise<FaultProxy>
  /**
   * One fault proxy between these workers and the broker (the loopback broker's HTTP); as
   * proxyDatabase. readAcks: it reads a real broker's protocol, for delay-acks.
   */
  proxyBroker(workers: string[], options?: {readAcks?: boolean}): Promise<FaultProxy>
  /** the producer goes on with its next op when one fails (a COMMIT whose answer was lost), saying so */
  producerGoesOn: boolean
}

/** One run's side of a fault, from arm() to the verdict. Every hook but exercised is optional. */
export interface Stage {
  /** before the first worker starts */
  start?(): Promise<void>
  /** once the consumer and the relays are spawned, before the producer */
  beforeProducer?(): Promise<void>
  /** on every tick of the watch loop, after dead workers were seen to */
  onTick?(): void
  /** on every tick once the producer is done, with the events not yet published or failed */
  onDraining?(pending: number): void
  /** true while the fault still holds something on its way (a delayed chunk): the run is not quiet yet */
  settling?(): boolean
  /** after the drain and the invariants: whether the fault happened, and what only it can check */
  exercised(outcome: Outcome): Promise<Exercise>
}

export interface Outcome {
  readonly observed: Observed
  readonly kills: readonly KillRecord[]
  /** the armed failpoints as the report lists them ("relay#1: relay.after-send=kill@2") */
  readonly armed: readonly string[]
}

export interface Exercise {
  /** why the fault did not happen; absent when it did */
  missed?: string
  /** violations only this fault can see */
  violations?: Violation[]
}
