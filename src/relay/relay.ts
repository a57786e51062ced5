// The relay: claim a batch -> publish -> settle (one UPDATE for the successes, a retry with
// backoff or the failed state for each failure), in `concurrency` loops per process. All SQL
// goes through ./claim.ts, i.e. the dialect functions: there is no second copy of it here.
import type {ClaimOptions, TableNames} from '../../dialects/index.js'
import {failpoint} from '../core/failpoints.js'
import type {Db, Listener} from '../db/index.js'
import {UsageError} from '../core/errors.js'
import {notifyChannel} from '../producer.js'
import type {Publisher, PublishResult} from '../publishers/types.js'
import {resolveTables} from '../schema/tables.js'
import {backoffDelay, DEFAULT_BACKOFF, type Backoff} from './backoff.js'
import {claimMarkFor, type ClaimMark} from './claim-mark.js'
import {claimBatch, markPublished, releaseLeases, retryEvent, type ClaimedEvent} from './claim.js'
import {RelayMetrics} from './metrics.js'
import {defaultOwner} from './owner.js'
import {Wakeup} from './wakeup.js'
import {failureWait} from './reconnect.js'
import {nextTurn} from '../core/event-loop.js'
import {clip} from '../core/text.js'
import {startPublishSpan} from '../tracing/publish-span.js'

export interface RelayLogger {
  info(msg: string, fields?: object): void
  warn(msg: string, fields?: object): void
  error(msg: string, fields?: object): void
}

export interface RelayOptions {
  db: Db
  publisher: Publisher
  tables?: Partial<TableNames>
  /** events per claim (default 100) */
  batch?: number
  /** lease length (default 30s); a batch must be settled within it or another relay may take over */
  leaseMs?: number
  /** idle poll interval (default 1s) */
  pollMs?: number
  /** the event is failed when its attempts reach this (default 10) */
  maxAttempts?: number
  /** retry delay: exponential from baseMs, capped at capMs, with jitter (default 1s..10m) */
  backoff?: Backoff
  /** batches in flight in this process (default 1) */
  concurrency?: number
  ordering?: 'none' | 'aggregate'
  /** lease owner (default host:pid:random) */
  owner?: string
  logger?: RelayLogger
  /** PostgreSQL: wake on the producer's NOTIFY as well as polling */
  listen?: boolean
  /** longest error text written to last_error (default 2000 characters) */
  maxErrorLength?: number
  /**
   * 'mark' (the default where the dialect has one, PostgreSQL): each claim starts at a low-water
   * mark the relay keeps in memory, so a held xid's dead index entries before it are not walked
   * again; 'start': from the start of the pending index.
   */
  claimFrom?: 'mark' | 'start'
  /**
   * 'mark': walk the whole index again this often, for rows made pending again (default leaseMs:
   * how long a crashed relay's events wait before another relay takes them over already)
   */
  markResetMs?: number
}

export interface DrainResult {
  published: number
  retried: number
  failed: number
  batches: number
  /** the broker took none of the last batch that failed (it looks down): its attempts were given back */
  outage?: boolean
  /** why the last batch with a failure had it: its first error (each event's own is in last_error) */
  error?: string
}

const SILENT: RelayLogger = {info() {}, warn() {}, error() {}}
/** share of the lease after which the unsent half of a batch is handed back, not sent */
const LATE_FRACTION = 0.8

function checkInt(value: number, name: string, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new UsageError(`relay ${name} must be a whole number >= ${min} (got ${value})`, `Pass a valid ${name}`)
  return value
}

function emptyResult(): DrainResult {
  return {published: 0, retried: 0, failed: 0, batches: 0}
}

function add(total: DrainResult, part: DrainResult): void {
  total.published += part.published
  total.retried += part.retried
  total.failed += part.failed
  total.batches += part.batches
  // what --once reports as the reason events are left: the latest failure, and whether it was an outage
  if (part.error !== undefined) {
    total.error = part.error
    total.outage = part.outage
  }
}

export class Relay {
  readonly owner: string
  readonly metrics = new RelayMetrics()
  private readonly db: Db
  private readonly publisher: Publisher
  private readonly names: TableNames
  private readonly claim: ClaimOptions
  private readonly pollMs: number
  private readonly maxAttempts: number
  private readonly backoff: Backoff
  private readonly concurrency: number
  private readonly logger: RelayLogger
  private readonly listen: boolean
  private readonly maxErrorLength: number
  private stopping = false
  /** batches in a row the broker took none of; the relay waits longer before each next claim */
  private outages = 0
  private outageSince = 0
  private running?: Promise<void>
  private listener?: Listener
  /** set once run()'s loops have ended, so a late LISTEN reconnect closes itself */
  private loopsDone = false
  private readonly wakeup = new Wakeup()
  /** the low-water mark; undefined: every claim starts at the start of the index */
  private readonly mark?: ClaimMark

  constructor(options: RelayOptions) {
    this.db = options.db
    this.publisher = options.publisher
    const t = options.tables ?? {}
    this.names = resolveTables({table: t.outbox, inboxTable: t.inbox, archiveTable: t.archive, schema: t.schema}, this.db.dialect)
    this.owner = options.owner ?? defaultOwner()
    this.claim = {
      batch: checkInt(options.batch ?? 100, 'batch', 1),
      leaseMs: checkInt(options.leaseMs ?? 30_000, 'leaseMs', 1),
      owner: this.owner,
      ordering: options.ordering ?? 'none',
    }
    this.pollMs = checkInt(options.pollMs ?? 1000, 'pollMs', 1)
    this.maxAttempts = checkInt(options.maxAttempts ?? 10, 'maxAttempts', 1)
    this.backoff = options.backoff ?? DEFAULT_BACKOFF
    checkInt(this.backoff.baseMs, 'backoff.baseMs', 0)
    checkInt(this.backoff.capMs, 'backoff.capMs', this.backoff.baseMs)
    this.concurrency = checkInt(options.concurrency ?? 1, 'concurrency', 1)
    this.logger = options.logger ?? SILENT
    this.listen = options.listen ?? false
    this.maxErrorLength = options.maxErrorLength ?? 2000
    this.mark = claimMarkFor(this.db.dialect, options.claimFrom, {refreshMs: this.pollMs, resetMs: options.markResetMs ?? this.claim.leaseMs})
  }

  /** The low-water mark the claims start at (undefined with claimFrom 'start'). */
  get claimMarkValue(): string | undefined {
    return this.mark?.current
  }

  /** True while a LISTEN connection is attached (PostgreSQL with listen: true). */
  get listening(): boolean {
    return this.listener !== undefined
  }

  /** Claims, publishes and settles until nothing is deliverable right now. Database errors reject. */
  async drainOnce(): Promise<DrainResult> {
    const total = emptyResult()
    this.mark?.reset() // deliverable now includes rows made pending again below the mark
    const worker = async () => {
      while (!this.stopping) {
        const part = await this.cycle()
        if (part === undefined) return
        add(total, part)
        await nextTurn() // SQLite: let SIGTERM and timers in between batches
      }
    }
    await Promise.all(Array.from({length: this.concurrency}, worker))
    return total
  }

  /** Runs until stop(): `concurrency` claim loops, sleeping pollMs (or until a NOTIFY) when idle. */
  start(): Promise<void> {
    if (this.running) return this.running
    this.stopping = false
    this.running = this.run()
    return this.running
  }

  /** Graceful: lets in-flight publishes finish and settle, releases leases not yet sent, stops listening. */
  async stop(): Promise<void> {
    this.stopping = true
    this.wakeup.wakeAll()
    await this.running?.catch(() => {})
    this.running = undefined
  }

  private async run(): Promise<void> {
    this.loopsDone = false
    this.mark?.reset()
    if (this.listen) await this.startListening()
    const loop = async () => {
      let failures = 0
      while (!this.stopping) {
        try {
          const part = await this.cycle()
          failures = 0
          if (part === undefined) await this.wakeup.sleep(this.pollMs)
          // broker down: claim again only after a backoff, or every claim would fail at once
          else if (part.outage) await this.wakeup.sleep(backoffDelay(this.outages, this.backoff))
          else await nextTurn() // SQLite: let SIGTERM and timers in between batches
        } catch (error) {
          // Database or publisher down: log, back off (capped), and keep going. Leases of a
          // batch that could not be settled lapse, and the events are delivered again.
          failures++
          this.metrics.errors++
          const waitMs = failureWait(this.pollMs, failures, error, this.db.dialect)
          this.logger.error('relay cycle failed', {error: errorText(error), consecutive: failures, retryInMs: waitMs})
          await this.wakeup.sleep(waitMs)
        }
      }
    }
    try {
      await Promise.all(Array.from({length: this.concurrency}, loop))
    } finally {
      this.loopsDone = true
      await this.listener?.close().catch(() => {})
      this.listener = undefined
    }
  }

  private async startListening(): Promise<void> {
    const listen = this.db.dialect.relay.listen
    if (!listen || !this.db.listen) {
      this.logger.warn(`listen is PostgreSQL only; ${this.db.dialect.name} relays poll every ${this.pollMs}ms`)
      return
    }
    const statement = listen(notifyChannel(this.names))
    const attach = async (): Promise<void> => {
      try {
        const listener = await this.db.listen!(statement, () => this.wakeup.wakeAll(), (error) => {
          this.listener = undefined
          this.logger.warn('LISTEN connection lost; polling until it is back', {error: errorText(error)})
          if (!this.stopping) setTimeout(() => void attach(), this.pollMs).unref()
        })
        // A reconnect that lands after stop() must not keep the connection (and the pool) open.
        if (this.loopsDone) await listener.close()
        else this.listener = listener
      } catch (error) {
        this.logger.warn('LISTEN failed; polling only', {error: errorText(error)})
        if (!this.stopping) setTimeout(() => void attach(), Math.max(this.pollMs, 1000)).unref()
      }
    }
    await attach()
  }

  /** One claim -> publish -> settle. Undefined when nothing was claimable. */
  private async cycle(): Promise<DrainResult | undefined> {
    const from = await this.mark?.before(this.db, this.names)
    const events = await claimBatch(this.db, this.names, from === undefined ? this.claim : {...this.claim, from})
    if (events.length === 0) return undefined
    const started = performance.now()
    failpoint('relay.after-claim')
    if (this.stopping) {
      // stop() came while we were claiming: nothing of this batch is in flight, hand it all back.
      const released = await releaseLeases(this.db, this.names, events.map((e) => e.id), this.owner)
      this.logger.info('batch released on stop', {claimed: events.length, released})
      return {published: 0, retried: 0, failed: 0, batches: 1}
    }
    // Two halves, so "part of the batch sent" is a real state a crash can leave behind, and a
    // stop between them hands the unsent half back at once instead of letting it lapse.
    const half = events.length > 1 ? Math.ceil(events.length / 2) : events.length
    const first = events.slice(0, half)
    const second = events.slice(half)
    const results = await this.send(first)
    failpoint('relay.mid-batch')
    let released = 0
    if (second.length > 0) {
      // Past most of the lease, the second half may already be another relay's: sending it
      // would only make duplicates. Hand it back (a no-op for rows taken over) instead.
      const late = performance.now() - started >= this.claim.leaseMs * LATE_FRACTION
      if (late) this.logger.warn('first half of the batch took most of the lease; handing the rest back', {handedBack: second.length, leaseMs: this.claim.leaseMs})
      if (this.stopping || late) released = await releaseLeases(this.db, this.names, second.map((e) => e.id), this.owner)
      else results.push(...(await this.send(second)))
    }
    const sent = events.slice(0, results.length)
    failpoint('relay.after-send')
    const elapsed = performance.now() - started
    if (elapsed > this.claim.leaseMs) {
      this.logger.warn('publishing took longer than the lease; another relay may have sent these events too', {ms: Math.round(elapsed), leaseMs: this.claim.leaseMs})
    }
    const outcome = await this.settle(sent, results)
    // why events were retried or failed: the first reason (each event's own is in last_error)
    const reason = results.find((r): r is Sent & {ok: false} => !r.ok)?.error
    failpoint('relay.after-mark')
    const ms = performance.now() - started
    this.metrics.observeBatch(ms / 1000)
    this.logger.info('batch', {
      claimed: events.length,
      published: outcome.published,
      retried: outcome.retried,
      failed: outcome.failed,
      released: released || undefined,
      ms: Math.round(ms * 10) / 10,
      error: reason === undefined ? undefined : clip(reason, 200),
    })
    return reason === undefined ? outcome : {...outcome, error: clip(reason, 300)}
  }

  /** The publisher's results, one per event; a publisher that throws fails the whole call (retryably). */
  private async send(events: ClaimedEvent[]): Promise<Sent[]> {
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

  private async settle(events: ClaimedEvent[], results: Sent[]): Promise<DrainResult> {
    const outcome: DrainResult = {published: 0, retried: 0, failed: 0, batches: 1}
    const ok: ClaimedEvent[] = []
    const failures: [ClaimedEvent, Sent & {ok: false}][] = []
    events.forEach((event, i) => {
      const result = results[i]
      if (result.ok) ok.push(event)
      else failures.push([event, result])
    })
    outcome.outage = this.brokerDown(events.length, failures.map(([, result]) => result))
    // No owner check: the broker has the events, so marking is right even when the lease
    // lapsed and another relay is re-sending them (consumers dedupe by id), or has failed
    // them meanwhile (the mark clears failed_at: delivered is delivered).
    await markPublished(this.db, this.names, ok)
    outcome.published = ok.length
    this.metrics.published += ok.length
    await Promise.all(
      failures.map(async ([event, result]) => {
        const permanent = result.permanent === true
        const fails = !outcome.outage && (permanent || event.attempts >= this.maxAttempts)
        const settled = await retryEvent(this.db, this.names, {
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
type Sent = PublishResult & {transport?: boolean}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as {cause?: unknown}).cause
    return cause instanceof Error && cause.message && !error.message.includes(cause.message) ? `${error.message}: ${cause.message}` : error.message
  }
  return String(error)
}
