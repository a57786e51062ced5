// What every broker runtime takes besides its broker's own options: the database of the inbox,
// the consumer's name, the handler and the loop's bounds.
import {raw, sql} from '../../dialects/sql.js'
import {Consumer, type ConsumerOptions} from '../consumer.js'
import {ConnectionError, UsageError} from '../core/errors.js'
import {describeDbError, type Db} from '../db/index.js'
import {isMissingTable} from '../db/errors.js'
import {resolveTables} from '../schema/tables.js'
import {runLoop, type ConsumeSummary, type DeliverySource, type LoopOptions} from './loop.js'

export interface RuntimeOptions extends Omit<LoopOptions, 'consumer' | 'databaseReachable'> {
  /** the database of the inbox; the handler's `tx` is a transaction on it */
  db: Db
  /** the consumer's name: dedupe is per (consumer, event id); also the default queue, durable or group name */
  consumer: string
  tables?: ConsumerOptions['tables']
  /** skip events whose aggregateVersion is not above the last one applied (Consumer's checkVersion) */
  checkVersion?: boolean
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
  if (options.retryDelayMs !== undefined && !(options.retryDelayMs >= 0)) throw new UsageError(`retryDelayMs must be 0 or more, got ${options.retryDelayMs}`)
}

/** Opens the source and runs the shared loop over it with a Consumer on options.db. */
export async function runOn(open: () => Promise<DeliverySource>, options: RuntimeOptions): Promise<ConsumeSummary> {
  checkRuntimeOptions(options)
  const consumer = new Consumer(options.db, {consumer: options.consumer, tables: options.tables, checkVersion: options.checkVersion})
  await checkInbox(options)
  const source = await open()
  return runLoop(source, {...options, consumer, databaseReachable: () => databaseReachable(options.db)})
}

/** After a failure: did the database answer? (No: an outage, not the handler's fault.) */
export async function databaseReachable(db: Db): Promise<boolean> {
  try {
    await db.query(sql`SELECT 1`)
    return true
  } catch {
    return false
  }
}

/**
 * The inbox must exist before a message is taken: else every handler fails the same way and
 * the whole queue would be retried into the dead letters.
 */
export async function checkInbox(options: RuntimeOptions): Promise<void> {
  const t = options.tables ?? {}
  const names = resolveTables({table: t.outbox, inboxTable: t.inbox, archiveTable: t.archive, schema: t.schema}, options.db.dialect)
  const inbox = options.db.dialect.render.table(names, 'inbox')
  try {
    await options.db.query(sql`SELECT 1 FROM ${raw(inbox)} WHERE 1 = 0`)
  } catch (error) {
    if (!isMissingTable(error)) throw describeDbError(error, options.db.safeUrl)
    throw new ConnectionError(`the inbox table ${inbox} does not exist`, (o) => `Create it with: outbox init --url URL --apply, or pass the inbox table (${o('inboxTable')})`)
  }
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

/** What to do when the broker connection is lost under a running consumer. */
export const BROKER_LOST_HINT = 'Run it again once the broker is back (a supervisor restarts it): nothing uncommitted was acked, and the broker delivers it again'

/** For clean-ups that throw when there is nothing left to clean (a closed channel or client). */
export function quietly(fn: () => void): void {
  try {
    fn()
  } catch {}
}
