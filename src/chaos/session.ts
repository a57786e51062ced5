// What one runChaos call shares across its runs: the settings, the worker processes and the
// cleanups of the run in progress. One per call: two calls in one process never meet.
import type {PartitionInterval} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import type {Scenario} from './business-scenario.js'
import {abandonRun} from './cleanup.js'
import type {ConsumerMode, Strategy} from './strategies.js'
import type {RealBroker} from './workers/transport.js'
import {WorkerPool} from './workers/worker-process.js'

export interface Settings {
  db: Db
  url: string
  scenario: Scenario
  scenarioPath?: string
  strategy: Strategy
  consumer: ConsumerMode
  relays: number
  orders: number
  broker?: RealBroker
  runTimeoutMs: number
  /** an idle relay's wait before its next poll */
  relayPollMs: number
  keep: boolean
  /** record each run's history (history.ts) */
  history: boolean
  /** --seed: every run's PRNG is made from it (seed.ts) */
  seed: number
  /** the runs' outbox partitioned by created_at (init --partition-by) */
  partitionBy?: PartitionInterval
  /** runChaos's signal: an abandoned run stops spawning workers and ends */
  signal?: AbortSignal
}

export class ChaosSession {
  readonly workers: WorkerPool
  // cleanups of runs in progress, run on interruption (a run's own finally cannot be awaited then)
  private readonly inFlight = new Set<() => Promise<void>>()
  // cleanups of finished runs still dropping their tables
  private readonly cleaning = new Set<Promise<void>>()

  constructor(readonly settings: Settings) {
    // the pool's processes load the database's driver while they wait
    this.workers = new WorkerPool({preloadUrl: settings.url})
  }

  /** Registers a run's cleanup until the returned function is called. */
  track(cleanup: () => Promise<void>): () => void {
    this.inFlight.add(cleanup)
    return () => this.inFlight.delete(cleanup)
  }

  /** Interrupted: kills every worker, lets `run` (in progress) end its step, then drops its scratch tables and broker objects (cleanup.ts). */
  async abandon(run?: Promise<unknown>): Promise<void> {
    await abandonRun(this, run, this.inFlight)
  }

  /** A finished run's cleanup, left to go on while the next run starts: close() waits for it. */
  cleanUpLater(cleanup: Promise<void>): void {
    const settled = cleanup.catch(() => {})
    this.cleaning.add(settled)
    void settled.then(() => this.cleaning.delete(settled))
  }

  /** Resolves once every worker process has gone and every run's cleanup is done. */
  async close(): Promise<void> {
    await Promise.all([this.workers.close(), ...this.cleaning])
  }
}
