// The relay: claim a batch -> publish -> settle (./settle.ts), in `concurrency` loops per
// process, whose claims take turns (Relay.turn). Each claim carries the mark of its
// loop's previous batch (./pending-mark.ts): one commit per batch. After a full batch, when
// publishing takes a real share of a claim's time, the next claim goes out while this one is
// published (./ahead.ts). All SQL goes through ./claim.ts, i.e. the dialect functions.
import type {ClaimOptions, TableNames} from '../../dialects/index.js'
import {failpoint} from '../core/failpoints.js'
import type {Db, Listener} from '../db/index.js'
import {notifyChannel} from '../producer.js'
import {resolveTables} from '../schema/tables.js'
import {DEFAULT_BACKOFF, type Backoff} from './backoff.js'
import {claimMarkFor, type ClaimMark} from './claim-mark.js'
import {claimBatch, releaseLeases, type ClaimedEvent} from './claim.js'
import {Mutex} from '../db/mutex.js'
import {handBack, type Ahead, type Claimed} from './ahead.js'
import {BatchSize, maxBatchFor} from './batch-size.js'
import {RelayMetrics} from './metrics.js'
import {addResult, checkInt, emptyResult, SILENT, type DrainResult, type RelayLogger, type RelayOptions} from './options.js'
import {defaultOwner} from './owner.js'
import {PendingMark} from './pending-mark.js'
import {errorText, Settler, type Sent} from './settle.js'
import {Wakeup} from './wakeup.js'
import {transactionCycle, transactionLeaseOf, type BatchTimes, type TransactionCycle} from './transaction-lease.js'
import {failureWait} from './reconnect.js'
import {nextTurn} from '../core/event-loop.js'
import {clip} from '../core/text.js'
import {UsageError} from '../core/errors.js'

export type {DrainResult, RelayLogger, RelayOptions} from './options.js'

/** share of the lease after which the unsent half of a batch is handed back, not sent */
const LATE_FRACTION = 0.8
/**
 * A claim is sent ahead once the loop's last publish took at least this share of a claim's
 * round trip. With a publisher that costs nothing (the benchmarks' no-op) sending ahead always
 * measured x0.96 (0.56-1.20) of not doing it; with one that took 3 ms a call, x1.46-1.59.
 */
const AHEAD_PUBLISH_SHARE = 0.25

export class Relay {
  readonly owner: string
  readonly metrics = new RelayMetrics()
  private readonly db: Db
  private readonly names: TableNames
  private readonly claim: ClaimOptions
  /** the most a claim asks for while claims come back full (./batch-size.ts) */
  private readonly maxBatch: number
  private readonly pollMs: number
  private readonly concurrency: number
  private readonly logger: RelayLogger
  private readonly listen: boolean
  private readonly settler: Settler
  private stopping = false
  private running?: Promise<void>
  private listener?: Listener
  /** set once run()'s loops have ended, so a late LISTEN reconnect closes itself */
  private loopsDone = false
  private readonly wakeup = new Wakeup()
  /** the low-water mark; undefined: every claim starts at the start of the index */
  private readonly mark?: ClaimMark
  /**
   * The loops' row-lease claims, one at a time; their publishes still overlap. Claims sent side
   * by side start at the same mark and race for the same rows: each walks the rows the others
   * hold, tries their locks and skips them, and rechecks rows leased since its snapshot. On
   * PostgreSQL, 20,000 events drained by 4 loops (durable, bench/results/relay-claim-turn.md):
   * the server's CPU 835 ms (700-980) side by side, 505 ms (370-640) taking turns (one loop:
   * 415), the drain x1.12 (0.88-1.26). The transaction lease does not take turns: its claims
   * cost no more side by side (470-600 ms). No wait limit: a claim ahead ends by itself.
   */
  private readonly turn = new Mutex(Infinity)
  /** lease 'transaction': what its cycle needs of this relay; undefined: row leases */
  private readonly txLease?: TransactionCycle

  constructor(options: RelayOptions) {
    this.db = options.db
    const t = options.tables ?? {}
    this.names = resolveTables({table: t.outbox, inboxTable: t.inbox, archiveTable: t.archive, schema: t.schema}, this.db.dialect)
    this.owner = options.owner ?? defaultOwner()
    this.claim = {
      batch: checkInt(options.batch ?? 100, 'batch', 1),
      leaseMs: checkInt(options.leaseMs ?? 30_000, 'leaseMs', 1),
      owner: this.owner,
      ordering: options.ordering ?? 'none',
    }
    this.maxBatch = maxBatchFor(this.claim.batch, options.maxBatch === undefined ? undefined : checkInt(options.maxBatch, 'maxBatch', this.claim.batch))
    this.pollMs = checkInt(options.pollMs ?? 1000, 'pollMs', 1)
    const maxAttempts = checkInt(options.maxAttempts ?? 10, 'maxAttempts', 1)
    const backoff: Backoff = options.backoff ?? DEFAULT_BACKOFF
    checkInt(backoff.baseMs, 'backoff.baseMs', 0)
    checkInt(backoff.capMs, 'backoff.capMs', backoff.baseMs)
    this.concurrency = checkInt(options.concurrency ?? 1, 'concurrency', 1)
    this.logger = options.logger ?? SILENT
    this.listen = options.listen ?? false
    const {db, names, owner, metrics, logger} = this
    this.settler = new Settler({db, names, owner, metrics, logger, publisher: options.publisher, maxAttempts, backoff, maxErrorLength: options.maxErrorLength ?? 2000})
    if (options.leaseBy !== undefined && options.leaseBy !== 'row' && options.leaseBy !== 'transaction') throw new UsageError(`relay leaseBy must be row or transaction (got ${String(options.leaseBy)})`, 'Pass leaseBy row or transaction')
    this.mark = claimMarkFor(this.db.dialect, options.claimFrom, {refreshMs: this.pollMs, resetMs: options.markResetMs ?? this.claim.leaseMs, marginMs: options.markMarginMs})
    if (options.leaseBy === 'transaction') {
      this.txLease = {
        db,
        names,
        settler: this.settler,
        logger,
        claim: this.claim,
        mark: this.mark,
        part: transactionLeaseOf(db),
        stopping: () => this.stopping,
        sendHalves: (events, at) => this.sendHalves(events, at),
        settleBatch: (events, results, t, settle) => this.settleBatch(events, results, t, settle),
        observeClaim: (seconds) => this.metrics.observeClaim(seconds),
      }
    }
  }

  /** The most a claim asks for (maxBatch, or its default). */
  get maxBatchSize(): number {
    return this.maxBatch
  }

  /** The low-water mark the claims start at (undefined with claimFrom 'start'). */
  get claimMarkValue(): string | undefined {
    return this.mark?.current
  }

  /** How far that mark trails the database clock, where the dialect bounds it by a margin (MySQL). */
  get claimMarkMarginMs(): number | undefined {
    return this.mark?.marginMs
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
      const pending = new PendingMark()
      const loop: Ahead = {size: this.batchSize(), awakeSince: performance.now()}
      try {
        while (!this.stopping) {
          const part = await this.cycle(pending, loop)
          // an empty claim sent ahead, before the last batch was settled, ends nothing: one
          // more claim carries that batch's mark and sees what it handed back
          if (part === undefined && !loop.wasAhead) return // that claim carried the last mark
          if (part) addResult(total, part)
          await nextTurn() // SQLite: let SIGTERM and timers in between batches
        }
      } finally {
        // stopped, or a database error: a claim sent ahead is handed back, and what was
        // published is marked before the drain returns
        await handBack(this.db, this.names, this.owner, loop, this.logger)
        await pending.flush(this.db, this.names)
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
      // this loop's published events, marked by its next claim (or flushed before it waits)
      const pending = new PendingMark()
      const ahead: Ahead = {size: this.batchSize(), awakeSince: performance.now()}
      while (!this.stopping) {
        try {
          const part = await this.cycle(pending, ahead)
          failures = 0
          // idle: the empty claim carried the mark, nothing is pending while the loop sleeps
          // (unless that claim went out ahead, before the last batch was settled: claim again)
          if (part === undefined) await (ahead.wasAhead ? nextTurn() : this.idle(ahead))
          // broker down: claim again only after a backoff, or every claim would fail at once;
          // a claim sent ahead meanwhile is handed back, not held through the wait
          else if (part.outage) {
            await handBack(this.db, this.names, this.owner, ahead, this.logger)
            await this.flushThen(pending, () => this.wakeup.sleep(this.settler.outageDelayMs))
          } else await nextTurn() // SQLite: let SIGTERM and timers in between batches
        } catch (error) {
          // Database or publisher down: log, back off (capped), and keep going. Leases of a
          // batch that could not be settled lapse, and the events are delivered again.
          failures++
          this.metrics.errors++
          const waitMs = failureWait(this.pollMs, failures, error, this.db.dialect)
          this.logger.error('relay cycle failed', {error: errorText(error), consecutive: failures, retryInMs: waitMs})
          await handBack(this.db, this.names, this.owner, ahead, this.logger)
          await this.flushThen(pending, () => this.wakeup.sleep(waitMs))
        }
      }
      await handBack(this.db, this.names, this.owner, ahead, this.logger)
      await this.flushThen(pending, async () => {})
    }
    try {
      await Promise.all(Array.from({length: this.concurrency}, loop))
    } finally {
      this.loopsDone = true
      await this.listener?.close().catch(() => {})
      this.listener = undefined
    }
  }

  /** A loop with nothing to claim: the mark's move that is due is made now, off any claim's path, then it sleeps (poll interval, NOTIFY or stop()). */
  private async idle(loop: Ahead): Promise<void> {
    await this.mark?.before(this.db, this.names)
    await this.wakeup.sleep(this.pollMs)
    loop.awakeSince = performance.now()
  }

  /** A loop's claims start at `batch`, growing to maxBatch while they come back full. */
  private batchSize(): BatchSize {
    return new BatchSize(this.claim.batch, this.maxBatch, this.claim.leaseMs)
  }

  /** Marks what the loop published before it waits or ends; a mark that fails stays pending for the next claim (or lapses). */
  private async flushThen(pending: PendingMark, then: () => Promise<void>): Promise<void> {
    try {
      await pending.flush(this.db, this.names)
    } catch (error) {
      this.logger.warn('could not mark published events; the next claim carries the mark', {events: pending.size, error: errorText(error)})
    }
    await then()
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

  /** One claim of the loop's size (carrying the mark of `pending`), sent at `at` (performance.now()). */
  private async claimNext(pending: PendingMark, loop: Ahead): Promise<Claimed> {
    const at = performance.now()
    const asked = loop.size.next
    const from = await this.mark?.before(this.db, this.names, loop.awakeSince)
    const {carried, restore} = pending.take()
    let events: ClaimedEvent[]
    let sent = at
    try {
      // `at` stays the time the loop asked: the lease runs from later, never earlier
      events = await this.turn.run(() => ((sent = performance.now()), claimBatch(this.db, this.names, {...this.claim, batch: asked, ...(from === undefined ? {} : {from}), ...(carried ? {mark: carried} : {})})))
    } catch (error) {
      restore() // rolled back with the claim (or committed, unknown: a second mark changes nothing)
      throw error
    }
    if (carried) failpoint('relay.after-mark')
    const ms = performance.now() - sent // the claim's own time, not its wait for the turn
    this.metrics.observeClaim(ms / 1000)
    return {events, at, ms, asked}
  }

  /**
   * One claim (the one `loop` sent ahead, or a new one carrying the mark of `pending`) ->
   * publish -> settle. Undefined when nothing was claimable. After a full batch, when the
   * loop's last publish took a real share of a claim's time, the next claim is sent before
   * this batch is published (loop.next): the database claims while the broker takes this
   * batch. It carries the marks of the batches settled before it; this batch's rides on the
   * claim after. Not when publishing costs next to nothing (a claim sent ahead then hides
   * nothing, and every claim walks one more batch of leased rows), nor with per-aggregate
   * ordering (this batch's aggregates would be held back from it), nor while the broker is down.
   */
  private async cycle(pending: PendingMark, loop: Ahead): Promise<DrainResult | undefined> {
    if (this.txLease) return transactionCycle(this.txLease, loop.size, loop.awakeSince)
    const next = loop.next
    loop.next = undefined // taken, whether it resolves or fails
    loop.wasAhead = next !== undefined
    const claimed = await (next ?? this.claimNext(pending, loop))
    const {events} = claimed
    if (events.length === 0) return undefined
    failpoint('relay.after-claim')
    if (this.stopping) {
      // stop() came while we were claiming: nothing of this batch is in flight, hand it all back.
      const released = await releaseLeases(this.db, this.names, events.map((e) => e.id), this.owner)
      this.logger.info('batch released on stop', {claimed: events.length, released})
      return {published: 0, retried: 0, failed: 0, batches: 1}
    }
    const worthIt = (loop.publishMs ?? 0) >= claimed.ms * AHEAD_PUBLISH_SHARE
    if (worthIt && events.length === claimed.asked && this.claim.ordering !== 'aggregate' && !this.settler.down) {
      loop.next = this.claimNext(pending, loop)
      loop.next.catch(() => {}) // awaited by the next cycle, or by handBack
    }
    const publishing = performance.now()
    const {results, unsent} = await this.sendHalves(events, claimed.at)
    loop.publishMs = performance.now() - publishing
    const released = unsent.length > 0 ? await releaseLeases(this.db, this.names, unsent.map((e) => e.id), this.owner) : 0
    const outcome = await this.settleBatch(events, results, {at: claimed.at, claimMs: claimed.ms, released}, (sent) => this.settler.settle(sent, results, pending))
    loop.size.observe(claimed.asked, events, performance.now() - claimed.at)
    return outcome
  }

  /**
   * Two halves, so "part of the batch sent" is a real state a crash can leave behind, and a
   * stop between them hands the unsent half back at once instead of letting it lapse. `unsent`:
   * the second half, when the relay is stopping or the first took most of the lease.
   */
  private async sendHalves(events: ClaimedEvent[], at: number): Promise<{results: Sent[]; unsent: ClaimedEvent[]}> {
    const half = events.length > 1 ? Math.ceil(events.length / 2) : events.length
    const second = events.slice(half)
    const results = await this.settler.send(events.slice(0, half))
    failpoint('relay.mid-batch')
    if (second.length === 0) return {results, unsent: []}
    // Past most of the lease, the second half may already be another relay's: sending it
    // would only make duplicates. Hand it back (a no-op for rows taken over) instead.
    const late = performance.now() - at >= this.claim.leaseMs * LATE_FRACTION
    if (late) this.logger.warn('first half of the batch took most of the lease; handing the rest back', {handedBack: second.length, leaseMs: this.claim.leaseMs})
    if (this.stopping || late) return {results, unsent: second}
    for (const result of await this.settler.send(second)) results.push(result)
    return {results, unsent: []}
  }

  /** Settles what was sent (`settle`: the events given a result), then counts and logs the batch. */
  private async settleBatch(
    events: ClaimedEvent[],
    results: Sent[],
    t: BatchTimes,
    settle: (sent: ClaimedEvent[]) => Promise<DrainResult>,
  ): Promise<DrainResult> {
    const sent = events.slice(0, results.length)
    failpoint('relay.after-send')
    const elapsed = performance.now() - t.at
    if (elapsed > this.claim.leaseMs) {
      this.logger.warn('publishing took longer than the lease; another relay may have sent these events too', {ms: Math.round(elapsed), leaseMs: this.claim.leaseMs})
    }
    const outcome = await settle(sent)
    // why events were retried or failed: the first reason (each event's own is in last_error)
    const reason = outcome.published === sent.length ? undefined : results.find((r): r is Sent & {ok: false} => !r.ok)?.error
    // from the claim sent: under a held horizon it is the claim that grows, not the publish
    const ms = performance.now() - t.at
    this.metrics.observeBatch(ms / 1000)
    this.logger.info('batch', {
      claimed: events.length,
      published: outcome.published,
      retried: outcome.retried,
      failed: outcome.failed,
      released: t.released || undefined,
      ms: Math.round(ms * 10) / 10,
      claimMs: Math.round(t.claimMs * 10) / 10,
      error: reason === undefined ? undefined : clip(reason, 200),
    })
    return reason === undefined ? outcome : {...outcome, error: clip(reason, 300)}
  }
}
