// Idempotent consumption: in one local transaction, record (consumer, event id) in the inbox
// and apply the effect. A duplicate id is skipped; with checkVersion a stale aggregate
// version (lower than or equal to one already applied) is recorded but not applied. The
// transaction runs on the executor the app gave (src/db/transactions.ts), and the effect gets
// the app's own transaction object on it.
import {createHash} from 'node:crypto'
import type {DialectName, InboxRow, TableNames} from '../dialects/index.js'
import {raw, sql} from '../dialects/sql.js'
import type {ConsumedEvent} from './consume/event.js'
import {ConnectionError, UsageError} from './core/errors.js'
import {failpoint} from './core/failpoints.js'
import {describeDbError, type Db, type Queryable} from './db/index.js'
import {isMissingTable} from './db/errors.js'
import {runUnderLock} from './db/lock.js'
import {transactionHost, type TransactionOf} from './db/transactions.js'
import type {TransactionHost} from './db/types.js'
import {resolveTables} from './schema/tables.js'
import {inProcessSpan, type MessageSource} from './tracing/process-span.js'

export type {TransactionOf} from './db/transactions.js'

export type ConsumeOutcome = 'applied' | 'duplicate' | 'stale'

/** What handle() reads of an event: its id, aggregate fields and trace headers. A ConsumedEvent is one. */
export type InboxEvent = Pick<ConsumedEvent, 'id'> & {
  aggregateType?: ConsumedEvent['aggregateType']
  aggregateId?: ConsumedEvent['aggregateId'] | null
  aggregateVersion?: ConsumedEvent['aggregateVersion']
  /** traceparent / tracestate: with @opentelemetry/api, handle's span continues that trace */
  headers?: ConsumedEvent['headers'] | null
}

/** One event of handleBatch and its effect. */
export interface BatchItem<Tx = any> {
  event: InboxEvent
  effect: (tx: Tx) => Promise<void>
  /** the broker it came from, for its tracing span */
  source?: MessageSource
}

/** One event's result in handleBatch: its outcome (committed with the batch), or the error that undid it alone. */
export type BatchResult = {outcome: ConsumeOutcome; error?: undefined} | {outcome?: undefined; error: unknown}

/** A batch's all-at-once transaction failed inside: roll it back and run the batch a savepoint per event. */
class Redo extends Error {
  constructor(
    readonly reason: unknown,
    /** the item whose effect threw `reason` */
    readonly failedIndex?: number,
  ) {
    super('the batch runs again, a savepoint per event', {cause: reason})
  }
}

const compareIds = (a: string, b: string) => {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()]
  return x < y ? -1 : x > y ? 1 : 0
}

// The most inbox rows in one statement: 5 bound values a row, well inside the 65,535 a statement
// may bind on PostgreSQL and MySQL. A bigger batch takes a savepoint per event.
const INBOX_ROWS_AT_ONCE = 1000

// one name for every event's savepoint: each is released (or rolled back to and released) before the next
const SAVEPOINT = 'outbox_event'

export interface ConsumerOptions {
  /** the consumer's name: dedupe is per (consumer, event id) */
  consumer: string
  tables?: Partial<TableNames>
  /** skip events whose aggregate_version is not newer than the last one applied */
  checkVersion?: boolean
  /** default: detected from the executor (a mysql2 connection is told by its shape: name it where that guess could be wrong) */
  dialect?: DialectName
}

/**
 * new Consumer(executor, options): the executor is the app's own, where the inbox table lives: a
 * pg Pool or Client, a mysql2/promise pool or connection, a Kysely instance, a better-sqlite3
 * Database, or a Db from openDb. Each handle() is one transaction on it (a connection of a pool;
 * on a single connection, one at a time), and the effect gets that transaction: TransactionOf<E>.
 */
export class Consumer<E extends object = Db> {
  private readonly host: TransactionHost
  private readonly names: TableNames

  constructor(
    executor: E,
    private readonly options: ConsumerOptions,
  ) {
    if (!options.consumer) throw new UsageError('consumer name is required', "e.g. new Consumer(pool, {consumer: 'inventory'})")
    this.host = transactionHost(executor, options.dialect)
    const t = options.tables ?? {}
    this.names = resolveTables({table: t.outbox, inboxTable: t.inbox, archiveTable: t.archive, schema: t.schema}, this.host.dialect)
  }

  /**
   * Runs `effect` at most once per event id for this consumer, atomically with the inbox row.
   * With @opentelemetry/api, inside a CONSUMER span whose parent is the event's traceparent;
   * `source` names the broker the event came from in that span.
   */
  async handle(event: InboxEvent, effect: (tx: TransactionOf<E>) => Promise<void>, source?: MessageSource): Promise<ConsumeOutcome> {
    return inProcessSpan(event, this.options.consumer, source, () => this.handleOnce(event, effect))
  }

  private async handleOnce(event: InboxEvent, effect: (tx: TransactionOf<E>) => Promise<void>): Promise<ConsumeOutcome> {
    const checked = this.versionCheck(event)
    const record = (q: Queryable, tx: unknown) => this.record(q, tx, event, effect, checked)
    if (!checked) return this.host.transaction(record)
    // one aggregate's events are checked one consumer at a time: else two handlers read the
    // same max version and both apply, the older over the newer
    const key = `outbox:${createHash('sha1').update(JSON.stringify([this.options.consumer, event.aggregateType ?? null, checked.aggregateId])).digest('hex').slice(0, 40)}`
    return runUnderLock(this.host, {key, waitSeconds: 30, busy: `another consumer of aggregate ${checked.aggregateId}`}, record)
  }

  /**
   * Several events in ONE transaction: one COMMIT (one WAL flush) for all. An effect that throws
   * undoes its own event alone and the others commit: its result is {error}. Resolves once the
   * transaction committed; throws when the transaction as a whole failed (BEGIN, COMMIT, a
   * savepoint that could not be rolled back to): then nothing of the batch committed. With
   * checkVersion (or one event) each event runs in a transaction of its own, as handle().
   *
   * The way it runs: first all the inbox rows in one statement, then the effects one after the
   * other (the statements an event costs are its effect's own). When an effect throws (or the
   * inbox statement fails), that transaction is rolled back and the batch runs again with a
   * savepoint around each event (its inbox row and effect): the effects before the failing one
   * run a second time, their first run undone; the failing one is not called again (its error
   * is its result), nor are the ones after it called twice. On MySQL (no RETURNING) a batch
   * holding an id already in the inbox goes the savepoint way at once, in the same transaction.
   */
  async handleBatch(items: readonly BatchItem<TransactionOf<E>>[]): Promise<BatchResult[]> {
    if (items.length <= 1 || this.options.checkVersion) {
      const results: BatchResult[] = []
      for (const item of items) results.push(await this.handle(item.event, item.effect, item.source).then((outcome) => ({outcome}), (error: unknown) => ({error})))
      return results
    }
    if (items.length > INBOX_ROWS_AT_ONCE) return this.host.transaction((q, tx) => this.eachInSavepoint(q, tx, items))
    try {
      return await this.host.transaction((q, tx) => this.allAtOnce(q, tx, items))
    } catch (error) {
      if (!(error instanceof Redo)) throw error
      // the effect that threw is not called again for this delivery: its error is its result
      return this.host.transaction((q, tx) => this.eachInSavepoint(q, tx, items, error))
    }
  }

  /** The inbox rows in one statement, then each new event's effect; Redo when any of it fails. */
  private async allAtOnce(q: Queryable, tx: unknown, items: readonly BatchItem[]): Promise<BatchResult[]> {
    const fresh = await this.insertInbox(q, items)
    if (!fresh) return this.eachInSavepoint(q, tx, items)
    const results: BatchResult[] = []
    for (const [i, item] of items.entries()) {
      const apply = async (): Promise<ConsumeOutcome> => {
        if (!fresh.has(i)) return 'duplicate'
        await item.effect(tx)
        failpoint('consumer.before-commit')
        return 'applied'
      }
      // the span records the effect's own error; the batch then runs again
      const outcome = await inProcessSpan(item.event, this.options.consumer, item.source, apply).catch((error) => Promise.reject(new Redo(error, i)))
      results.push({outcome})
    }
    return results
  }

  /**
   * Which of `items` the inbox statement inserted (by index; an id twice in the batch counts for
   * its first item), or undefined where a duplicate raised and undid the statement (MySQL).
   */
  private async insertInbox(q: Queryable, items: readonly BatchItem[]): Promise<Set<number> | undefined> {
    const {events, errors} = this.host.dialect
    // in the order of their ids, whatever order they arrived in: two consumers given the same
    // ids (redeliveries) take their row locks in one order, so their batches cannot deadlock
    const rows = items.map(({event}) => this.inboxRow(event)).sort((a, b) => compareIds(a.eventId, b.eventId))
    const statement = events.inboxInsertMany(this.names, rows)
    const returnedId = events.inboxReturnedId
    if (!returnedId) {
      const inserted = await q.execute(statement).catch((error) => (errors.isDuplicateKey(error) ? undefined : Promise.reject(new Redo(error))))
      return inserted === undefined ? undefined : new Set(items.keys())
    }
    const returned = await q.query<{event_id: string}>(statement).catch((error) => Promise.reject(new Redo(error)))
    // the items under the id the statement returns for theirs, in batch order
    const byId = new Map<string, number[]>()
    for (const [i, {event}] of items.entries()) {
      const id = returnedId(event.id)
      const same = byId.get(id)
      if (same) same.push(i)
      else byId.set(id, [i])
    }
    const fresh = new Set<number>()
    for (const {event_id} of returned) {
      // an id twice in the batch was inserted once: for the first of its items
      const i = byId.get(String(event_id))?.find((j) => !fresh.has(j))
      if (i === undefined) throw new Redo(new Error(`the inbox returned ${event_id}, which no event of the batch has`))
      fresh.add(i)
    }
    return fresh
  }

  /** Each event inside a savepoint of its own: an effect that throws undoes that event alone. */
  private async eachInSavepoint(q: Queryable, tx: unknown, items: readonly BatchItem[], redo?: Redo): Promise<BatchResult[]> {
    const savepoint = this.host.dialect.events.savepoint
    const results: BatchResult[] = []
    for (const [i, item] of items.entries()) {
      if (i === redo?.failedIndex) {
        results.push({error: redo.reason})
        continue
      }
      await q.execute(savepoint.open(SAVEPOINT))
      try {
        // its span covers the event's own part; the COMMIT is the batch's, after every span
        const outcome = await inProcessSpan(item.event, this.options.consumer, item.source, () => this.record(q, tx, item.event, item.effect, undefined))
        await q.execute(savepoint.release(SAVEPOINT))
        results.push({outcome})
      } catch (error) {
        // this event alone is undone; when even that fails the transaction is lost: the batch throws
        await q.execute(savepoint.rollbackTo(SAVEPOINT))
        await q.execute(savepoint.release(SAVEPOINT))
        results.push({error})
      }
    }
    return results
  }

  private inboxRow(event: InboxEvent): InboxRow {
    return {
      consumer: this.options.consumer,
      eventId: event.id,
      aggregateType: event.aggregateType ?? null,
      aggregateId: event.aggregateId ?? null,
      aggregateVersion: event.aggregateVersion ?? null,
    }
  }

  private versionCheck(event: InboxEvent): {version: number; aggregateId: string} | undefined {
    const version = event.aggregateVersion ?? null
    return this.options.checkVersion && version !== null && event.aggregateId ? {version, aggregateId: event.aggregateId} : undefined
  }

  /** In the open transaction: the inbox row (nothing for an id seen before), then the effect. */
  private async record(q: Queryable, tx: unknown, event: InboxEvent, effect: (tx: TransactionOf<E>) => Promise<void>, checked: {version: number; aggregateId: string} | undefined): Promise<ConsumeOutcome> {
    const {dialect} = this.host
    let stale = false
    if (checked) {
      const [row] = await q.query<{max_version: number | string | null}>(dialect.events.inboxMaxVersion(this.names, this.options.consumer, event.aggregateType ?? null, checked.aggregateId))
      stale = row?.max_version != null && Number(row.max_version) >= checked.version
    }
    const insert = dialect.events.inboxInsert(this.names, this.inboxRow(event))
    // a dialect whose duplicate raises (MySQL) keeps the transaction going after it
    const inserted = await q.execute(insert).catch((error) => (dialect.errors.isDuplicateKey(error) ? 0 : Promise.reject(error)))
    if (inserted === 0) return 'duplicate'
    if (stale) return 'stale'
    await effect(tx as TransactionOf<E>)
    failpoint('consumer.before-commit')
    return 'applied'
  }

  /**
   * Resolves once the inbox table is there. A runtime asks before it takes a message: else every
   * handler would fail the same way, and the whole queue be retried into the dead letters.
   */
  async checkInbox(): Promise<void> {
    const inbox = this.host.dialect.render.table(this.names, 'inbox')
    try {
      await this.host.query(sql`SELECT 1 FROM ${raw(inbox)} WHERE 1 = 0`)
    } catch (error) {
      if (!isMissingTable(error)) throw this.host.safeUrl ? describeDbError(error, this.host.safeUrl) : error
      throw new ConnectionError(`the inbox table ${inbox} does not exist`, (o) => `Create it with: outbox init --url URL --apply, or pass the inbox table (${o('inboxTable')})`)
    }
  }

  /** Whether the database answers: after a failure, tells an outage from the handler's own error. */
  async reachable(): Promise<boolean> {
    try {
      await this.host.query(sql`SELECT 1`)
      return true
    } catch {
      return false
    }
  }
}
