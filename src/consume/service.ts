// `outbox consume` as a service: open the database, run the broker's runtime with a logger on
// stderr until the signal or --max-events, close what it opened. The handler's `tx` is the
// driver's own object inside the transaction (pg client, mysql2/promise connection,
// better-sqlite3 Database), as an app that passes its own pool gets it.
import {driverTransactions} from '../db/executor.js'
import {openDb} from '../db/index.js'
import {createLogger, type LogFormat} from '../relay/logger.js'
import type {TableNames} from '../../dialects/index.js'
import {consumeFrom, type BrokerOptions} from './index.js'
import type {ConsumeSummary, EventHandler} from './loop.js'

export interface ConsumeServiceOptions {
  /** the database URL of the inbox (and of the handler's effects) */
  url: string
  tables: TableNames
  /** the broker URL, or http://HOST:PORT/PATH to receive the relay's POSTs */
  from: string
  broker: BrokerOptions
  consumer: string
  handler: EventHandler
  concurrency?: number
  /** deliveries per inbox transaction (brokers; not http) */
  maxBatch?: number
  maxAttempts?: number
  retryDelayMs?: number
  maxEvents?: number
  checkVersion?: boolean
  signal?: AbortSignal
  logFormat?: LogFormat
  quiet?: boolean
}

export async function runConsumeService(options: ConsumeServiceOptions): Promise<ConsumeSummary> {
  const logger = createLogger({format: options.logFormat, quiet: options.quiet, secrets: [options.url, options.from]})
  const db = await openDb(options.url, {poolSize: Math.max(2, (options.concurrency ?? 1) + 1)})
  try {
    logger.info('consuming', {from: options.from, consumer: options.consumer, concurrency: options.concurrency ?? 1, batch: options.maxBatch, max_events: options.maxEvents})
    const summary = await consumeFrom(options.from, options.broker, {
      db: driverTransactions(db),
      consumer: options.consumer,
      tables: options.tables,
      handler: options.handler,
      concurrency: options.concurrency,
      maxBatch: options.maxBatch,
      maxAttempts: options.maxAttempts,
      retryDelayMs: options.retryDelayMs,
      maxEvents: options.maxEvents,
      checkVersion: options.checkVersion,
      signal: options.signal,
      logger,
      onListening: (url) => logger.info('listening', {url}),
    })
    logger.info('stopped', {...summary})
    return summary
  } finally {
    await db.close().catch(() => {})
  }
}
