// What every broker runtime takes besides its broker's own options: the app's executor where the
// inbox lives, the consumer's name, the handler and the loop's bounds.
import {Consumer, type ConsumerOptions, type TransactionOf} from '../consumer.js'
import {UsageError} from '../core/errors.js'
import type {Handoff} from './handoff.js'
import {runLoop, type ConsumeSummary, type Delivery, type DeliverySource, type EventHandler, type LoopOptions} from './loop.js'

export interface RuntimeOptions<E extends object = any> extends Omit<LoopOptions, 'consumer' | 'databaseReachable' | 'handler'> {
  /**
   * where the inbox lives, the app's own: a pg Pool or Client, a mysql2/promise pool or
   * connection, a Kysely instance, a better-sqlite3 Database, or a Db from openDb
   */
  db: E
  /** the effect of one event; its `tx` is the transaction on db (TransactionOf<E>: the pg client inside BEGIN, ...) */
  handler: EventHandler<TransactionOf<E>>
  /** the consumer's name: dedupe is per (consumer, event id); also the default queue, durable or group name */
  consumer: string
  tables?: ConsumerOptions['tables']
  /** skip events whose aggregateVersion is not above the last one applied (Consumer's checkVersion) */
  checkVersion?: boolean
  /** db's dialect, where its shape could be another's (Consumer's dialect) */
  dialect?: ConsumerOptions['dialect']
}

/**
 * Most deliveries in one inbox transaction when maxBatch is not given: one COMMIT (one WAL flush)
 * paid for up to 16 events (BENCHMARKS.md, consumer throughput). A batch whose handler throws
 * runs again with a savepoint per delivery: well below PostgreSQL's 64 subtransactions a backend
 * keeps in shared memory (one per savepoint that wrote).
 */
export const DEFAULT_MAX_BATCH = 16
export const MAX_BATCH_LIMIT = 64

/** Deliveries in one transaction: 1 with checkVersion (each event takes its aggregate's lock in a transaction of its own). */
export function batchSize(options: Pick<RuntimeOptions, 'maxBatch' | 'checkVersion'>): number {
  return options.checkVersion ? 1 : (options.maxBatch ?? DEFAULT_MAX_BATCH)
}

/** Deliveries the loop may hold in its transactions at once: concurrency x batch. A source keeps as many waiting. */
export function inFlight(options: Pick<RuntimeOptions, 'maxBatch' | 'checkVersion' | 'concurrency'>): number {
  return (options.concurrency ?? 1) * batchSize(options)
}

/** Refuses bad bounds before anything connects. */
export function checkRuntimeOptions(options: RuntimeOptions): void {
  if (!options.consumer) throw new UsageError('consumer name is required', "e.g. {consumer: 'billing'}")
  if (typeof options.handler !== 'function') throw new UsageError('handler must be a function', 'e.g. {handler: async (event, tx) => { ... }}')
  const positive = (name: keyof RuntimeOptions) => {
    const value = options[name]
    if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) > 0)) throw new UsageError(`${name} must be a positive integer, got ${String(value)}`)
  }
  positive('concurrency')
  positive('maxAttempts')
  positive('maxEvents')
  positive('maxBatch')
  if ((options.maxBatch ?? 0) > MAX_BATCH_LIMIT) throw new UsageError(`maxBatch must be at most ${MAX_BATCH_LIMIT}, got ${options.maxBatch}`, 'A batch whose handler fails runs again with a savepoint per delivery: keep a transaction well under 64 of them')
  if (options.retryDelayMs !== undefined && !(options.retryDelayMs >= 0)) throw new UsageError(`retryDelayMs must be 0 or more, got ${options.retryDelayMs}`)
}

/** The runtime's Consumer on options.db, its inbox checked: refused before a message is taken. */
export async function inboxConsumer(options: RuntimeOptions): Promise<Consumer<object>> {
  checkRuntimeOptions(options)
  const consumer = new Consumer(options.db, {consumer: options.consumer, tables: options.tables, checkVersion: options.checkVersion, dialect: options.dialect})
  await consumer.checkInbox()
  return consumer
}

/** Opens the source and runs the shared loop over it with a Consumer on options.db. */
export async function runOn(open: () => Promise<DeliverySource>, options: RuntimeOptions): Promise<ConsumeSummary> {
  const consumer = await inboxConsumer(options)
  const source = await open()
  return runLoop(source, {...options, maxBatch: batchSize(options), consumer, databaseReachable: () => consumer.reachable()})
}

/** A promise that resolves after ms, or at once when the signal is aborted. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, {once: true})
  })
}

/**
 * Deliveries wait in the handoff while a batch's transaction runs (up to a batch of handlers):
 * tell the broker, every everyMs, that they are not forgotten (NATS AckWait, Redis claim-idle),
 * as the loop does for those in a transaction. Returns the stop.
 */
export function keepWaitingAlive(handoff: Handoff<Delivery>, everyMs: number): () => void {
  const timer = setInterval(() => {
    for (const d of handoff.pending) d.keepAlive?.touch()
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}

/** What to do when the broker connection is lost under a running consumer. */
export const BROKER_LOST_HINT = 'Run it again once the broker is back (a supervisor restarts it): nothing uncommitted was acked, and the broker delivers it again'

/** For clean-ups that throw when there is nothing left to clean (a closed channel or client). */
export function quietly(fn: () => void): void {
  try {
    fn()
  } catch {}
}
