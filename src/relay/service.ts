// `outbox relay` as a library call: open the database and the publisher, run the relay
// (once, or until SIGTERM/SIGINT), serve metrics, and close everything on the way out.
import type {TableNames} from '../../dialects/index.js'
import {onStopSignals, type StopSignals} from '../core/stop-signals.js'
import {describeDbError, openDb, type Db} from '../db/index.js'
import {redactUrl} from '../core/redact.js'
import {createPublisher, type PublisherName, type PublisherOptionsByName} from '../publishers/index.js'
import type {Publisher} from '../publishers/types.js'
import {databaseNow} from '../ops/query.js'
import {relayBacklog, undelivered, type Backlog, type Undelivered} from './backlog.js'
import {createLogger, type LogFormat} from './logger.js'
import {serveMetrics, type MetricsServer} from './metrics-server.js'
import {onceVerdict} from './once.js'
import {PartitionWatch} from './partition-watch.js'
import {addResult} from './options.js'
import {Relay, type DrainResult, type RelayOptions} from './relay.js'
import {maxBatchFor} from './batch-size.js'

export interface RelayServiceOptions<N extends PublisherName = PublisherName> {
  url: string
  tables: TableNames
  publisher: N
  publisherOptions: PublisherOptionsByName[N]
  /** where events go, for the start-up line (password masked) */
  target?: string
  relay: Omit<RelayOptions, 'db' | 'publisher' | 'tables' | 'logger'>
  /** drain what is deliverable now and return, instead of running until a signal */
  once?: boolean
  logFormat?: LogFormat
  quiet?: boolean
  metricsPort?: number
  metricsHost?: string
}

export interface RelayServiceResult extends DrainResult {
  /** what is left in the outbox afterwards (always read for --once) */
  backlog?: Backlog
  /** --once: events the run should have delivered that are still pending (see undelivered()) */
  undelivered?: number
  /** --once, exit code not 0: how many events are left and why, one line */
  reason?: string
  /** 0 done; --once: 1 events left pending or failed, 130/143 stopped by SIGINT/SIGTERM with events left */
  exitCode: number
}

export async function runRelayService(options: RelayServiceOptions): Promise<RelayServiceResult> {
  const logger = createLogger({format: options.logFormat, quiet: options.quiet, secrets: [options.url, options.target]})
  const table = redactUrl(options.tables.schema ? `${options.tables.schema}.${options.tables.outbox}` : options.tables.outbox)
  const concurrency = options.relay.concurrency ?? 1
  // One connection per batch in flight, one for LISTEN, one for metrics and settling.
  const db = await openDb(options.url, {poolSize: concurrency + 2, asyncCommit: true, mustExist: true})
  let publisher: Publisher | undefined
  let metrics: MetricsServer | undefined
  let partitions: PartitionWatch | undefined
  const stopSignals: (() => void)[] = []
  try {
    await relayBacklog(db, options.tables).catch((error) => {
      throw describeDbError(error, options.url, {table})
    })
    publisher = await createPublisher(options.publisher, options.publisherOptions as never)
    const maxBatch = options.relay.maxBatch ?? maxBatchWithinLease(options)
    const relay = new Relay({...options.relay, maxBatch, db, publisher, tables: options.tables, logger})
    if (options.metricsPort !== undefined) {
      // a port in use or not ours to bind rejects as a usage error naming the option (metrics-server.ts)
      metrics = await serveMetrics({db, names: options.tables, metrics: relay.metrics, port: options.metricsPort, host: options.metricsHost})
      logger.info('metrics', {url: `http://${options.metricsHost ?? '127.0.0.1'}:${metrics.port}/metrics`})
    }
    logger.info('relay started', {
      owner: relay.owner,
      database: db.safeUrl,
      table,
      publisher: options.publisher,
      target: options.target ? redactUrl(options.target) : undefined,
      batch: options.relay.batch ?? 100,
      maxBatch: relay.maxBatchSize,
      concurrency,
      ordering: options.relay.ordering ?? 'none',
      claimFrom: relay.claimMarkValue === undefined ? 'start' : 'mark',
      markMarginMs: relay.claimMarkMarginMs,
      leaseBy: options.relay.leaseBy === 'transaction' ? 'transaction' : undefined,
      listen: options.relay.listen && db.dialect.relay.listen ? true : undefined,
      once: options.once || undefined,
    })
    const worst = worstPublishMs(options, relay.maxBatchSize)
    if (worst > (options.relay.leaseMs ?? 30_000)) {
      logger.warn('a slow batch can outlive its lease and be sent twice: raise --lease, or lower --batch or --publish-timeout', {
        worstCaseMs: worst,
        leaseMs: options.relay.leaseMs ?? 30_000,
      })
    }
    // a partitioned outbox whose last range is near: one line now, and again only when that changes
    partitions = new PartitionWatch(db, options.tables, logger)
    await partitions.start()
    if (options.once) {
      // a deploy or a cancelled CI job stops --once too: the batch in flight finishes, the rest is handed back
      const stop = stopOnSignals(relay, logger, stopSignals)
      const {result, backlog, left} = await drainAndCount(relay, db, options.tables).catch((error) => {
        throw describeDbError(error, options.url, {table})
      })
      // Events other relays hold right now are theirs to report; ours is every other pending one, and the failed.
      const verdict = onceVerdict({drain: result, left, failed: backlog.failed, stopped: stop.received, target: options.target})
      logger.info('drained', {...result, pending: backlog.pending, undelivered: left.total, retrying: backlog.retrying, in_flight: backlog.inFlight, failed_total: backlog.failed})
      return {...result, backlog, undelivered: left.total, ...verdict}
    }
    await runUntilSignal(relay, logger, stopSignals)
    const m = relay.metrics
    logger.info('relay stopped', {published: m.published, retried: m.retried, failed: m.failed, batches: m.batches})
    return {published: m.published, retried: m.retried, failed: m.failed, batches: m.batches, exitCode: 0}
  } finally {
    for (const remove of stopSignals) remove()
    partitions?.stop()
    await metrics?.close().catch(() => {})
    await publisher?.close().catch(() => {})
    await closeDb(db)
  }
}

/** --once: the drain, then what is left, and of that what this run should have delivered (events written before it began, by the database clock, or attempted). */
async function drainAndCount(relay: Relay, db: Db, names: TableNames): Promise<{result: DrainResult; backlog: Backlog; left: Undelivered}> {
  const startedAt = await databaseNow(db)
  const result = await relay.drainOnce()
  let left = await undelivered(db, names, startedAt)
  // Rows another relay's claim has locked but not yet leased (MySQL: its locking read, then its
  // UPDATE, then COMMIT) read as unleased: once its lease commits they are its to report, and
  // what is really left is ours to claim. So, while some look claimable, wait a moment and drain
  // again (4 concurrent --once relays on MariaDB: one exited 1 with 20 such events, 1 full run in 2).
  for (let n = 1; n <= ONCE_RECHECKS && result.error === undefined && left.total > left.waiting; n++) {
    await new Promise((resolve) => setTimeout(resolve, 50 * n))
    addResult(result, await relay.drainOnce())
    left = await undelivered(db, names, startedAt)
  }
  return {result, backlog: await relayBacklog(db, names), left}
}

/** how many times --once drains again while events it should deliver look claimable (see drainAndCount) */
const ONCE_RECHECKS = 3

/** First SIGTERM/SIGINT: graceful stop. A second one: exit now (leases lapse on their own). */
function stopOnSignals(relay: Relay, logger: ReturnType<typeof createLogger>, cleanups: (() => void)[]): StopSignals {
  const stop = onStopSignals(
    (signal) => {
      logger.info(`${signal}: stopping after the batch in flight`)
      void relay.stop()
    },
    (signal) => logger.warn(`${signal} again: exiting without waiting; unsent leases lapse on their own`),
  )
  cleanups.push(stop.dispose)
  return stop
}

async function runUntilSignal(relay: Relay, logger: ReturnType<typeof createLogger>, cleanups: (() => void)[]): Promise<void> {
  stopOnSignals(relay, logger, cleanups)
  await relay.start()
}

/** Longest a batch of `size` can take to publish when every request times out (http sends in rounds). */
function worstPublishMs(options: RelayServiceOptions, size: number): number {
  const {timeoutMs, perRound} = publishRounds(options)
  return timeoutMs * (perRound ? Math.ceil(size / perRound) : 1)
}

/** The publisher's timeout, and how many events one round of its requests carries (undefined: the whole batch at once). */
function publishRounds(options: RelayServiceOptions): {timeoutMs: number; perRound?: number} {
  const o = options.publisherOptions as {timeoutMs?: number; concurrency?: number}
  if (options.publisher === 'stdout') return {timeoutMs: 0}
  const timeoutMs = o.timeoutMs ?? (options.publisher === 'http' || options.publisher === 'amqp' ? 10_000 : 5000)
  return {timeoutMs, perRound: options.publisher === 'http' ? (o.concurrency ?? 16) : undefined}
}

/**
 * --max-batch unset: claims grow only as far as a batch whose every request times out still fits
 * in the lease (http sends in rounds; the brokers' publishes wait for one acknowledgement time),
 * and never below --batch. Undefined: the library's default.
 */
function maxBatchWithinLease(options: RelayServiceOptions): number | undefined {
  const {timeoutMs, perRound} = publishRounds(options)
  if (!perRound || timeoutMs === 0) return undefined
  const batch = options.relay.batch ?? 100
  const fits = Math.floor((options.relay.leaseMs ?? 30_000) / timeoutMs) * perRound
  return Math.max(batch, Math.min(maxBatchFor(batch, undefined), fits))
}

async function closeDb(db: Db): Promise<void> {
  await db.close().catch(() => {})
}
