// Write an event inside the caller's own transaction. Never commits: that is the caller's.
import type {Dialect, DialectName, TableNames} from '../dialects/index.js'
import {DIALECTS, type RunSql} from '../dialects/index.js'
import {kyselyRun, recogniseExecutor} from './db/executor.js'
import {UsageError} from './core/errors.js'
import {serialiseHeaders, serialisePayload} from './schema/payload.js'
import {resolveTables} from './schema/tables.js'
import {isUuid, uuidv7} from './core/uuid.js'
import {withActiveTraceContext} from './tracing/trace-context.js'

export interface NewEvent {
  eventType: string
  aggregateId: string
  payload: unknown
  aggregateType?: string | null
  aggregateVersion?: number | null
  /**
   * e.g. W3C traceparent / tracestate. With @opentelemetry/api the active span's are added,
   * unless these hold a traceparent or tracestate of their own
   */
  headers?: Record<string, string> | null
  /** your own id (a UUID); default: a time-ordered UUID v7 */
  id?: string
}

export interface ProducerOptions {
  /** default: detected from the executor */
  dialect?: DialectName
  tables?: Partial<TableNames>
  maxPayloadBytes?: number
  /** PostgreSQL: NOTIFY listening relays at commit (default true on PostgreSQL) */
  notify?: boolean
}

/** A pg Client / PoolClient or a mysql2/promise connection inside your transaction, or a Kysely transaction. */
export type Executor = object

const EXECUTORS = 'Pass a pg client, a mysql2/promise connection or a Kysely transaction, or use writeEventSync for better-sqlite3'

/**
 * writeEvent's one refusal of what is not inside the caller's transaction, whatever it is: a
 * pool or a Db would run the insert on a connection of its own and commit it alone, a Kysely
 * instance would autocommit it, a better-sqlite3 Database outside database.transaction() too.
 */
function notInTransaction(): UsageError {
  return new UsageError(
    'writeEvent runs inside your transaction, and the executor it was given is not in one',
    'Pass what the transaction runs on: a pg client after BEGIN, a mysql2/promise connection after beginTransaction(), a Kysely transaction (trx), or call writeEventSync inside a better-sqlite3 transaction',
  )
}

/**
 * Detects the executor's kind; returns how to run SQL on it and its dialect. A pg client or a
 * mysql2 connection outside a transaction cannot be told from one inside without a round trip
 * per event: writeEvent would autocommit on it, alone (the README says so).
 */
function adapt(executor: Executor, wanted?: DialectName): {run: RunSql; dialect: Dialect} {
  const found = recogniseExecutor(executor, wanted, EXECUTORS)
  if (found.kind === 'db') throw notInTransaction()
  const dialect = DIALECTS[found.dialect]
  if (found.kind === 'kysely') {
    if (!found.inTransaction) throw notInTransaction()
    return {dialect, run: kyselyRun(found.kysely)}
  }
  if (found.executor.kind === 'pool') throw notInTransaction()
  const {session} = found.executor
  if (session.runSync) throw new UsageError('writeEvent was given a synchronous driver\'s connection (better-sqlite3)', 'Use writeEventSync(database, event) inside database.transaction(...)')
  if (session.inTransaction?.() === false) throw notInTransaction()
  return {dialect, run: session.run}
}

function statements(dialect: Dialect, event: NewEvent, options: ProducerOptions) {
  if (typeof event?.eventType !== 'string' || event.eventType === '') throw new UsageError('eventType is required', "e.g. 'order.created'")
  if (typeof event.aggregateId !== 'string' || event.aggregateId === '') throw new UsageError('aggregateId is required', 'Pass the id of the entity the event is about')
  if (event.aggregateVersion != null && !Number.isSafeInteger(event.aggregateVersion)) throw new UsageError('aggregateVersion must be an integer', 'e.g. 1, 2, 3')
  if (event.id != null && !isUuid(event.id)) throw new UsageError(`event id ${JSON.stringify(event.id)} is not a UUID`, 'Omit id to get a UUID v7')
  // one spelling on every dialect, as PostgreSQL's uuid prints it: on MySQL and SQLite the id
  // compares as text, and consumers dedupe on it
  const id = event.id != null ? event.id.toLowerCase() : uuidv7()
  const names = resolveTables({table: options.tables?.outbox, inboxTable: options.tables?.inbox, archiveTable: options.tables?.archive, schema: options.tables?.schema}, dialect)
  const insert = dialect.render.compile(
    dialect.events.insertEvent(names, {
      id,
      eventType: event.eventType,
      aggregateType: event.aggregateType ?? null,
      aggregateId: event.aggregateId,
      aggregateVersion: event.aggregateVersion ?? null,
      payload: serialisePayload(event.payload, dialect.name, options.maxPayloadBytes),
      // with @opentelemetry/api, the active span's traceparent, captured now (not when sent)
      headers: serialiseHeaders(withActiveTraceContext(event.headers)),
    }),
  )
  const notify = dialect.relay.notify && options.notify !== false ? dialect.render.compile(dialect.relay.notify(notifyChannel(names))) : undefined
  return {id, insert, notify}
}

/** The NOTIFY channel relays listen on for a table. */
export function notifyChannel(names: TableNames): string {
  return names.schema ? `${names.schema}.${names.outbox}` : names.outbox
}

/** Inserts the event with the caller's executor, inside the caller's transaction. Returns its id. */
export async function writeEvent(executor: Executor, event: NewEvent, options: ProducerOptions = {}): Promise<string> {
  const {run, dialect} = adapt(executor, options.dialect)
  const {id, insert, notify} = statements(dialect, event, options)
  await run(insert.text, insert.params)
  if (notify) await run(notify.text, notify.params)
  return id
}

/** better-sqlite3 is synchronous: call this inside `database.transaction(() => ...)`. */
export function writeEventSync(database: object, event: NewEvent, options: Omit<ProducerOptions, 'dialect' | 'notify'> = {}): string {
  const found = DIALECTS.sqlite.driver.executor(database)
  const session = found?.kind === 'session' ? found.session : undefined
  if (!session?.runSync) throw new UsageError('writeEventSync takes a better-sqlite3 Database', 'Use writeEvent for other executors')
  if (!session.inTransaction?.()) throw notInTransaction()
  const {id, insert} = statements(DIALECTS.sqlite, event, options)
  session.runSync(insert.text, insert.params)
  return id
}
