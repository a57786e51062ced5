// Write an event inside the caller's own transaction. Never commits: that is the caller's.
import type {Dialect, DialectName, TableNames} from '../dialects/index.js'
import {DIALECT_NAMES, DIALECTS, type RunSql} from '../dialects/index.js'
import {method} from '../dialects/driver.js'
import {UsageError} from './core/errors.js'
import {serialiseHeaders, serialisePayload} from './schema/payload.js'
import {resolveTables} from './schema/tables.js'
import {isUuid, uuidv7} from './core/uuid.js'

export interface NewEvent {
  eventType: string
  aggregateId: string
  payload: unknown
  aggregateType?: string | null
  aggregateVersion?: number | null
  /** e.g. W3C traceparent / tracestate */
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

/** A pg Client / PoolClient, a mysql2 (promise) connection, or a Kysely transaction. */
export type Executor = object

/** Detects the executor's kind; returns how to run SQL on it and its dialect. */
function adapt(executor: Executor, wanted?: DialectName): {run: RunSql; dialect: Dialect} {
  const executeQuery = method(executor, 'executeQuery')
  if (executeQuery && method(executor, 'selectFrom')) {
    const adapter = (method(executor, 'getExecutor')?.() as {adapter?: object} | undefined)?.adapter
    const kind = adapter?.constructor.name ?? ''
    const dialect = wanted ? DIALECTS[wanted] : Object.values(DIALECTS).find((d) => d.driver.kyselyAdapter.test(kind))
    if (!dialect) throw new UsageError('cannot tell the Kysely dialect', `Pass {dialect: ${DIALECT_NAMES.map((name) => `'${name}'`).join(' | ')}}`)
    return {dialect, run: (text, params) => executeQuery({sql: text, parameters: params, query: {kind: 'RawNode'}, queryId: {queryId: 'outbox'}}) as Promise<unknown>}
  }
  for (const dialect of Object.values(DIALECTS)) {
    const client = dialect.driver.client(executor)
    if (client) return {run: client.run, dialect: wanted && !client.sure ? DIALECTS[wanted] : dialect}
  }
  throw new UsageError('unsupported executor', 'Pass a pg client, a mysql2/promise connection, a Kysely transaction, or use writeEventSync for better-sqlite3')
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
      headers: serialiseHeaders(event.headers),
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

interface SqliteDatabase {
  prepare(text: string): {run(...params: unknown[]): unknown}
}

/** better-sqlite3 is synchronous: call this inside `database.transaction(() => ...)`. */
export function writeEventSync(database: SqliteDatabase, event: NewEvent, options: Omit<ProducerOptions, 'dialect' | 'notify'> = {}): string {
  const {id, insert} = statements(DIALECTS.sqlite, event, options)
  // Preparing costs about as much as the rest of the call: keep one per database and text.
  let cache = PREPARED.get(database)
  if (!cache) PREPARED.set(database, (cache = new Map()))
  let statement = cache.get(insert.text)
  if (!statement) cache.set(insert.text, (statement = database.prepare(insert.text)))
  statement.run(...insert.params)
  return id
}

const PREPARED = new WeakMap<SqliteDatabase, Map<string, {run(...params: unknown[]): unknown}>>()
