// After a batch was claimed: publish it, then settle each event. Successes wait in the loop's
// PendingMark for its next claim to mark them; a failure is retried with backoff or failed at
// maxAttempts; a broker that took none of the batch is an outage, whose attempts are given back.
import type {RetryInput, TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import type {Publisher, PublishResult} from '../publishers/types.js'
import {clip} from '../core/text.js'
import {startPublishSpan} from '../tracing/publish-span.js'
import {backoffDelay, type Backoff} from './backoff.js'
import {retryEvent, type ClaimedEvent} from './claim.js'
import type {RelayMetrics} from './metrics.js'
import type {DrainResult, RelayLogger} from './options.js'
import type {PendingMark} from './pending-mark.js'

export interface SettlerOptions {
  db: Db
  names: TableNames
  publisher: Publisher
  owner: string
  maxAttempts: number
  backoff: Backoff
  maxErrorLength: number
  metrics: RelayMetrics
  logger: RelayLogger
}

export class Settler {
  /** batches in a row the broker took none of; the relay waits longer before each next claim */
  private outages = 0
  private outageSince = 0
  private readonly db: Db
  private readonly names: TableNames
  private readonly publisher: Publisher
  private readonly owner: string
  private readonly maxAttempts: number
  private readonly backoff: Backoff
  private readonly maxErrorLength: number
  private readonly metrics: RelayMetrics
  private readonly logger: RelayLogger

  constructor(o: SettlerOptions) {
    this.db = o.db
    this.names = o.names
    this.publisher = o.publisher
    this.owner = o.owner
    this.maxAttempts = o.maxAttempts
    this.backoff = o.backoff
    this.maxErrorLength = o.maxErrorLength
    this.metrics = o.metrics
    this.logger = o.logger
  }

  /** the last batch found the broker down (no claim is sent ahead then) */
  get down(): boolean {
    return this.outages > 0
  }

  /** how long the loop waits before its next claim while the broker is down */
  get outageDelayMs(): number {
    return backoffDelay(this.outages, this.backoff)
  }

  /** The publisher's results, one per event; a publisher that throws fails the whole call (retryably). */
  async send(events: ClaimedEvent[]): Promise<Sent[]> {
    const span = startPublishSpan(this.publisher, events) // undefined without @opentelemetry/api
    let results: Sent[]
    try {
      results = await this.publisher.publish(events)
      if (results.length !== events.length) throw new Error(`publisher ${this.publisher.name} returned ${results.length} results for ${events.length} events`)
    } catch (error) {
      const message = `${this.publisher.name}: ${errorText(error)}`
      results = events.map(() => ({ok: false, error: message, transport: true}))
    }
    span?.end(results)
    return results
  }

  /** `retry`: how a failure is recorded (default: a statement of its own; the transaction lease queues it for its commit) */
  async settle(events: ClaimedEvent[], results: Sent[], pending: PendingMark, retry = (input: RetryInput) => retryEvent(this.db, this.names, input)): Promise<DrainResult> {
    const outcome: DrainResult = {published: 0, retried: 0, failed: 0, batches: 1}
    const ok: ClaimedEvent[] = []
    const failures: [ClaimedEvent, Sent & {ok: false}][] = []
    for (let i = 0; i < events.length; i++) {
      const result = results[i]
      if (result.ok) ok.push(events[i])
      else failures.push([events[i], result])
    }
    outcome.outage = this.brokerDown(events.length, failures.length === 0 ? [] : failures.map(([, result]) => result))
    // No owner check: the broker has the events, so marking is right even when the lease
    // lapsed and another relay is re-sending them (consumers dedupe by id), or has failed
    // them meanwhile (the mark clears failed_at: delivered is delivered). The mark itself
    // rides on the loop's next claim; pending before the retries, which may throw.
    pending.add(ok)
    outcome.published = ok.length
    this.metrics.published += ok.length
    if (failures.length === 0) return outcome // every event of a healthy batch: nothing to record
    await Promise.all(
      failures.map(async ([event, result]) => {
        const permanent = result.permanent === true
        const fails = !outcome.outage && (permanent || event.attempts >= this.maxAttempts)
        const settled = await retry({
          id: event.id,
          owner: this.owner,
          // an outage: every event of the batch waits as long as the relay does, attempt given back
          delayMs: outcome.outage ? backoffDelay(this.outages, this.backoff) : fails ? 0 : backoffDelay(event.attempts, this.backoff),
          error: clip(result.error, this.maxErrorLength),
          maxAttempts: permanent ? 0 : this.maxAttempts,
          refund: outcome.outage,
        })
        if (!settled) {
          this.metrics.leaseLost++
          this.logger.warn('lease lost before the failure was recorded; the new owner will retry', {id: event.id})
        } else if (fails) {
          outcome.failed++
          this.metrics.failed++
          this.logger.warn(`event failed after ${event.attempts} attempt(s)`, {id: event.id, eventType: event.eventType, error: clip(result.error, 300)})
        } else {
          outcome.retried++
          this.metrics.retried++
        }
      }),
    )
    return outcome
  }

  /**
   * The broker is down when it took nothing of the batch, refused nothing of it for good, and
   * the connection itself failed on the way (the publisher threw, or said `unreachable`: a
   * connection lost mid-batch fails the events before it as "channel closed" and those after
   * as "connect ECONNREFUSED"). A broker that answers, even with errors for every event, is no
   * outage: those are the events' own attempts. Counts outages in a row, for the pause, and
   * logs when one starts and ends.
   */
  private brokerDown(size: number, failures: (Sent & {ok: false})[]): boolean {
    const down = failures.length === size && failures.every((f) => f.permanent !== true) && failures.some((f) => f.transport || f.unreachable)
    if (down) {
      if (this.outages++ === 0) this.outageSince = performance.now()
      this.logger.warn('broker took none of the batch; its events keep their attempts, next claim after a backoff', {
        error: clip(failures[0].error, 300),
        claimed: size,
        waitMs: backoffDelay(this.outages, this.backoff),
        consecutive: this.outages,
      })
    } else if (this.outages > 0 && failures.length < size) {
      this.logger.info('broker back', {afterMs: Math.round(performance.now() - this.outageSince), batches: this.outages})
      this.outages = 0
    }
    return down
  }
}

/** A publish result, and whether it came from a publisher that threw (no connection at all). */
export type Sent = PublishResult & {transport?: boolean}

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as {cause?: unknown}).cause
    return cause instanceof Error && cause.message && !error.message.includes(cause.message) ? `${error.message}: ${cause.message}` : error.message
  }
  return String(error)
}
