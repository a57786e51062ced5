// The loop every broker runtime shares: take a delivery, run the handler through Consumer (the
// inbox row and the effect in one transaction), and only then settle the message with the
// broker. Handler errors are retried up to maxAttempts deliveries, then dead-lettered; a
// database that cannot be reached is no handler error: the message is held and tried again
// once the database answers, so an outage dead-letters nothing.
import type {Consumer, ConsumeOutcome} from '../consumer.js'
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
  /** deliveries of one message before a handler error dead-letters it (default 5) */
  maxAttempts?: number
  /** delay before a message whose handler failed is delivered again (default 1 s) */
  retryDelayMs?: number
  /** stop once this many messages were settled (acked or dead-lettered) */
  maxEvents?: number
  /** abort to stop: in-flight handlers finish and are acked, nothing else is taken */
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

  const settle = async (delivery: Delivery): Promise<'settled' | 'retried'> => {
    const {event} = delivery
    if (event instanceof MessageDecodeError) {
      await delivery.deadLetter(event.message)
      summary.deadLettered++
      log.warn('dead-lettered a message that is no outbox event', {error: event.message})
      return 'settled'
    }
    if (delivery.attempt > maxAttempts) {
      // delivered again and again without being settled: a handler that kills the process
      const reason = `delivered ${delivery.attempt} times without being settled (the consumer may have died handling it)`
      await delivery.deadLetter(reason)
      summary.deadLettered++
      log.warn('dead-lettered', {id: event.id, eventType: event.eventType, attempt: delivery.attempt, error: reason})
      return 'settled'
    }
    for (let outage = 0; ; outage++) {
      let outcome: ConsumeOutcome
      try {
        outcome = await withKeepAlive(delivery, () => options.consumer.handle(event, (tx) => options.handler(event, tx), delivery.source))
      } catch (error) {
        const reason = errorText(error)
        if (options.databaseReachable && !(await options.databaseReachable().catch(() => false))) {
          if (stopping) {
            await delivery.retry(`the database cannot be reached: ${reason}`, 0)
            return 'retried'
          }
          if (outage === 0) log.warn('the database cannot be reached; holding the message until it answers', {id: event.id, error: reason})
          await sleep(Math.min(OUTAGE_BACKOFF.capMs, OUTAGE_BACKOFF.firstMs * 2 ** Math.min(outage, 10)), delivery)
          continue
        }
        if (delivery.attempt >= maxAttempts) {
          await delivery.deadLetter(reason)
          summary.deadLettered++
          log.warn(`dead-lettered after ${delivery.attempt} attempt(s)`, {id: event.id, eventType: event.eventType, error: reason})
          return 'settled'
        }
        await delivery.retry(reason, retryDelayMs)
        log.warn('handler failed; the message will be delivered again', {id: event.id, eventType: event.eventType, attempt: delivery.attempt, error: reason})
        return 'retried'
      }
      summary[outcome]++
      try {
        await delivery.ack(outcome)
      } catch (error) {
        // committed: a redelivery finds the inbox row and is acked as a duplicate
        log.warn('committed, but the broker did not take the ack; it will deliver the message again', {id: event.id, error: errorText(error)})
      }
      return 'settled'
    }
  }

  const worker = async () => {
    while (!stopping && summary.settled + reserved < max) {
      reserved++
      let delivery: Delivery | null
      try {
        delivery = await source.next()
      } catch (error) {
        reserved--
        throw error
      }
      if (!delivery) {
        reserved--
        break
      }
      let result: 'settled' | 'retried'
      try {
        result = await settle(delivery)
      } finally {
        reserved--
      }
      if (result === 'settled') summary.settled++
      else summary.retried++
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

/** Runs fn while telling the broker, every keepAlive.everyMs, that the message is still being handled. */
async function withKeepAlive<T>(delivery: Delivery, fn: () => Promise<T>): Promise<T> {
  if (!delivery.keepAlive) return fn()
  const timer = setInterval(() => delivery.keepAlive!.touch(), delivery.keepAlive.everyMs)
  try {
    return await fn()
  } finally {
    clearInterval(timer)
  }
}

async function sleep(ms: number, delivery: Delivery): Promise<void> {
  delivery.keepAlive?.touch()
  await new Promise((resolve) => setTimeout(resolve, ms))
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  return String(error)
}
