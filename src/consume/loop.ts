// The loop every broker runtime shares: take a delivery, and with it what else the source has
// received meanwhile (up to maxBatch), run the handler through Consumer (the inbox rows and the
// effects in one transaction; a savepoint per delivery once a handler throws), and only then
// settle the messages with the broker. Handler errors are retried up to maxAttempts deliveries,
// then dead-lettered; a database that cannot be reached is no handler error: the message is held
// and tried again once the database answers, so an outage dead-letters nothing.
import type {BatchResult, Consumer, ConsumeOutcome} from '../consumer.js'
import type {RelayLogger} from '../relay/relay.js'
import {MessageDecodeError, type ConsumedEvent} from './event.js'
import type {MessageSource} from '../tracing/process-span.js'

/**
 * The handler: the effect of one event, inside the inbox transaction `tx`, the app's own
 * transaction object on the runtime's db (TransactionOf: the pg client inside BEGIN, ...).
 */
export type EventHandler<Tx = any> = (event: ConsumedEvent, tx: Tx) => Promise<void>

/** One message as a broker delivered it. Settle it exactly once: ack, retry or deadLetter. */
export interface Delivery {
  /** the event, or why the message carries none (dead-lettered at once) */
  event: ConsumedEvent | MessageDecodeError
  /** this delivery's number, 1 the first time, counted by the broker */
  attempt: number
  /** the effect is committed (or the event was a duplicate or stale): the broker may forget the message */
  ack(outcome: ConsumeOutcome): Promise<void>
  /** hand the message back for another delivery after about delayMs */
  retry(reason: string, delayMs: number): Promise<void>
  /** out of the queue for good, where the broker keeps dead letters */
  deadLetter(reason: string): Promise<void>
  /** the broker and queue, subject or stream it came from, for the consumer's span */
  source?: MessageSource
  /** while the handler runs: tell the broker not to redeliver yet (NATS AckWait) */
  keepAlive?: {everyMs: number; touch(): void}
}

/** What a broker runtime provides to the loop. */
export interface DeliverySource {
  /** the next delivery, or null once stop() was called (or the source ended) */
  next(): Promise<Delivery | null>
  /**
   * Deliveries received already, at most max, taken from the head while accept says yes; never
   * waits. What the loop puts in the same transaction as the one next() gave (a source without
   * it: one delivery per transaction).
   */
  ready?(max: number, accept: (delivery: Delivery) => boolean): Delivery[]
  /** take no new messages; the ones received and not yet handed out go back to the broker */
  stop(): Promise<void>
  /** after the loop: close the connections */
  close(): Promise<void>
}

export interface LoopOptions {
  consumer: Consumer<object>
  handler: EventHandler
  /** deliveries handled at once (default 1) */
  concurrency?: number
  /**
   * most deliveries in one inbox transaction (default 1 here; the broker runtimes' default is
   * DEFAULT_MAX_BATCH, 16): what the source received while the last
   * transaction ran, their inbox rows in one INSERT, one COMMIT for all, every ack after it
   */
  maxBatch?: number
  /** deliveries of one message before a handler error dead-letters it (default 5) */
  maxAttempts?: number
  /** delay before a message whose handler failed is delivered again (default 1 s) */
  retryDelayMs?: number
  /** stop once this many messages were settled (acked or dead-lettered) */
  maxEvents?: number
  /** abort to stop: the transactions in flight (whole batches) finish and are acked, nothing else is taken */
  signal?: AbortSignal
  /** true when the database answers; asked after a failure, to tell an outage from a handler error */
  databaseReachable?: () => Promise<boolean>
  logger?: RelayLogger
}

export interface ConsumeSummary {
  applied: number
  duplicate: number
  stale: number
  /** handler errors given back to the broker for another delivery */
  retried: number
  deadLettered: number
  /** acked (applied, duplicate, stale) or dead-lettered */
  settled: number
  /** true when a signal or stop() ended the run before maxEvents (or the source ran dry) */
  stopped: boolean
}

const SILENT: RelayLogger = {info() {}, warn() {}, error() {}}
const OUTAGE_BACKOFF = {firstMs: 250, capMs: 5000}

export const DEFAULT_MAX_ATTEMPTS = 5
export const DEFAULT_RETRY_DELAY_MS = 1000

export async function runLoop(source: DeliverySource, options: LoopOptions): Promise<ConsumeSummary> {
  const summary: ConsumeSummary = {applied: 0, duplicate: 0, stale: 0, retried: 0, deadLettered: 0, settled: 0, stopped: false}
  const log = options.logger ?? SILENT
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
  const retryDelayMs = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS
  const max = options.maxEvents ?? Infinity
  let reserved = 0 // deliveries taken and not yet settled or given back: with settled, never above max
  let stopping = false
  const stop = () => {
    if (stopping) return
    stopping = true
    void source.stop().catch((error) => log.warn('stopping the broker consumer failed', {error: errorText(error)}))
  }
  const onAbort = () => {
    summary.stopped = summary.settled < max
    stop()
  }
  if (options.signal?.aborted) onAbort()
  options.signal?.addEventListener('abort', onAbort, {once: true})

  /** Settled without a transaction (true): a message that is no event, or one delivered too often. */
  const settledUnhandled = async (delivery: Delivery): Promise<boolean> => {
    const {event} = delivery
    if (event instanceof MessageDecodeError) {
      await delivery.deadLetter(event.message)
      log.warn('dead-lettered a message that is no outbox event', {error: event.message})
    } else if (delivery.attempt > maxAttempts) {
      // delivered again and again without being settled: a handler that kills the process
      const reason = `delivered ${delivery.attempt} times without being settled (the consumer may have died handling it)`
      await delivery.deadLetter(reason)
      log.warn('dead-lettered', {id: event.id, eventType: event.eventType, attempt: delivery.attempt, error: reason})
    } else return false
    summary.deadLettered++
    summary.settled++
    return true
  }

  /** A handler error (or a transaction that failed as a whole): another delivery later, or the dead letters at maxAttempts. */
  const failed = async (delivery: Delivery, event: ConsumedEvent, reason: string): Promise<void> => {
    if (delivery.attempt >= maxAttempts) {
      await delivery.deadLetter(reason)
      summary.deadLettered++
      summary.settled++
      log.warn(`dead-lettered after ${delivery.attempt} attempt(s)`, {id: event.id, eventType: event.eventType, error: reason})
      return
    }
    await delivery.retry(reason, retryDelayMs)
    summary.retried++
    log.warn('handler failed; the message will be delivered again', {id: event.id, eventType: event.eventType, attempt: delivery.attempt, error: reason})
  }

  const acked = async (delivery: Delivery, event: ConsumedEvent, outcome: ConsumeOutcome): Promise<void> => {
    summary[outcome]++
    summary.settled++
    try {
      await delivery.ack(outcome)
    } catch (error) {
      // committed: a redelivery finds the inbox row and is acked as a duplicate
      log.warn('committed, but the broker did not take the ack; it will deliver the message again', {id: event.id, error: errorText(error)})
    }
  }

  /** One transaction for the deliveries (one: Consumer.handle; several: handleBatch), a result each. */
  const transaction = (deliveries: {delivery: Delivery; event: ConsumedEvent}[]): Promise<BatchResult[]> => {
    const items = deliveries.map(({delivery, event}) => ({event, effect: (tx: unknown) => options.handler(event, tx), source: delivery.source}))
    const run = async (): Promise<BatchResult[]> =>
      items.length === 1 ? [{outcome: await options.consumer.handle(items[0].event, items[0].effect, items[0].source)}] : options.consumer.handleBatch(items)
    return withKeepAlive(
      deliveries.map((d) => d.delivery),
      run,
    ).catch((error: unknown) => deliveries.map(() => ({error}))) // nothing of it committed
  }

  const settle = async (batch: Delivery[]): Promise<void> => {
    let pending: {delivery: Delivery; event: ConsumedEvent}[] = []
    for (const delivery of batch) if (!(await settledUnhandled(delivery))) pending.push({delivery, event: delivery.event as ConsumedEvent})
    for (let outage = 0; pending.length > 0; outage++) {
      const results = await transaction(pending)
      const failures: {delivery: Delivery; event: ConsumedEvent; reason: string}[] = []
      // every ack after the COMMIT: transaction() resolved once it committed
      await Promise.all(
        pending.map((p, i) => {
          const result = results[i]
          if (result.outcome) return acked(p.delivery, p.event, result.outcome)
          failures.push({...p, reason: errorText(result.error)})
        }),
      )
      if (failures.length === 0) return
      if (options.databaseReachable && !(await options.databaseReachable().catch(() => false))) {
        // an outage is no handler error: hold the messages and try again once the database answers
        if (stopping) {
          for (const f of failures) await f.delivery.retry(`the database cannot be reached: ${f.reason}`, 0)
          summary.retried += failures.length
          return
        }
        if (outage === 0) log.warn('the database cannot be reached; holding the message until it answers', {id: failures.map((f) => f.event.id).join(','), error: failures[0].reason})
        await sleep(Math.min(OUTAGE_BACKOFF.capMs, OUTAGE_BACKOFF.firstMs * 2 ** Math.min(outage, 10)), pending.map((p) => p.delivery))
        pending = failures
        continue
      }
      for (const f of failures) await failed(f.delivery, f.event, f.reason)
      return
    }
  }

  // a redelivery runs in a transaction of its own: were it the one that fails the batch's
  // COMMIT, its neighbours would otherwise share its retries into the dead letters
  const firstDelivery = (delivery: Delivery) => delivery.attempt <= 1
  const maxBatch = Math.max(1, options.maxBatch ?? 1)

  const worker = async () => {
    while (!stopping && summary.settled + reserved < max) {
      reserved++
      let first: Delivery | null
      try {
        first = await source.next()
      } catch (error) {
        reserved--
        throw error
      }
      if (!first) {
        reserved--
        break
      }
      const batch = [first]
      const room = Math.min(maxBatch - 1, max - summary.settled - reserved)
      if (room > 0 && firstDelivery(first) && source.ready) batch.push(...source.ready(room, firstDelivery))
      reserved += batch.length - 1
      try {
        await settle(batch)
      } finally {
        reserved -= batch.length
      }
      if (summary.settled >= max) stop()
    }
  }

  const concurrency = Math.max(1, options.concurrency ?? 1)
  try {
    const results = await Promise.allSettled(Array.from({length: concurrency}, worker))
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed) throw failed.reason
    return summary
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
    stop()
    await source.close()
  }
}

/** Runs fn while telling the broker, every keepAlive.everyMs, that the messages are still being handled. */
async function withKeepAlive<T>(deliveries: Delivery[], fn: () => Promise<T>): Promise<T> {
  const kept = deliveries.filter((d) => d.keepAlive)
  if (kept.length === 0) return fn()
  const timer = setInterval(() => touch(kept), Math.min(...kept.map((d) => d.keepAlive!.everyMs)))
  try {
    return await fn()
  } finally {
    clearInterval(timer)
  }
}

function touch(deliveries: Delivery[]): void {
  for (const d of deliveries) d.keepAlive?.touch()
}

async function sleep(ms: number, deliveries: Delivery[]): Promise<void> {
  touch(deliveries)
  await new Promise((resolve) => setTimeout(resolve, ms))
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  return String(error)
}
