// PostgreSQL through a pg Pool. int8 counts come back as numbers (per pool, not globally).
import type {Pool, PoolClient, QueryConfig} from 'pg'
import {createHash} from 'node:crypto'
import type {Sql} from '../index.js'
import {postgres} from './index.js'
import {heldConnection} from './held.js'
import {postgresTarget, pgTlsOptions} from './url.js'
import {redactUrl} from '../../src/core/redact.js'
import {poolWaitTimeout} from '../../src/db/errors.js'
import {connecting as connectingVia, tlsTries, type Connecting, type TransportSignals} from '../../src/db/transport.js'
import {DEFAULT_CONNECT_TIMEOUT_MS, type Db, type OpenOptions, type QueryOptions, type Queryable, type Row} from '../../src/db/types.js'
import {importOptional} from '../../src/core/optional.js'

// Statements bound from one template (src/ops/templates.ts Template) share their chunks: their text
// and prepared name are worked out once, not every batch.
const named = new WeakMap<readonly string[], {text: string; name?: string}>()

function config(statement: Sql, options?: QueryOptions): QueryConfig {
  let known = named.get(statement.chunks)
  if (!known) named.set(statement.chunks, (known = {text: postgres.render.compile(statement).text}))
  if (options?.prepare) known.name ??= 'outbox_' + createHash('sha1').update(known.text).digest('hex').slice(0, 16)
  return {text: known.text, values: [...statement.values], name: options?.prepare ? known.name : undefined}
}

/**
 * Sends it as (text, values) unless it is prepared: pg copies a query config object, every
 * property descriptor of it, on every query: 2.4 µs, against 0.01 µs for text and values
 * (pg's normalizeQueryConfig, 200,000 calls), where a whole query costs the process about
 * 60 µs of CPU here; a consumer's batch sends one query an event.
 */
function send(target: Pool | PoolClient, statement: Sql, options?: QueryOptions) {
  const {text, values, name} = config(statement, options)
  return name ? target.query({text, values, name}) : target.query(text, values)
}

// pg-pool's two timeouts, both from connectionTimeoutMillis: this one is the wait in its queue
// for a free client (the pool is full); a new client's TCP/login timeout is "Connection
// terminated due to connection timeout" instead, which describeDbError reports as unreachable.
const POOL_QUEUE_TIMEOUT = 'timeout exceeded when trying to connect'
/** pg's error when query_timeout (OpenOptions.queryTimeoutMs) fired */
const QUERY_TIMED_OUT = 'Query read timeout'

// what pg's errors say about TLS (its own words: it gives these no code)
const NO_TLS = 'The server does not support SSL connections'
const signals = (error: unknown): TransportSignals => {
  const e = (error ?? {}) as {code?: unknown; message?: unknown}
  return {noTlsOffered: e.message === NO_TLS, plainRefused: e.code === '28000' && /no encryption/.test(String(e.message))}
}

function queryable(target: Pool | PoolClient, connecting: Connecting = (fn) => fn()): Queryable {
  const run = (statement: Sql, options?: QueryOptions) => connecting(() => send(target, statement, options))
  return {
    async query<R = Row>(statement: Sql, options?: QueryOptions) {
      return (await run(statement, options)).rows as R[]
    },
    async execute(statement: Sql, options?: QueryOptions) {
      return (await run(statement, options)).rowCount ?? 0
    },
  }
}

export async function open(url: string, options: OpenOptions = {}): Promise<Db> {
  const target = postgresTarget(url)
  const pg = (await importOptional('pg', 'a postgres:// URL', () => import('pg'))).default
  const INT8 = 20
  const types = {
    getTypeParser: (oid: number, format?: string) =>
      oid === INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text'),
  }
  const poolSize = options.poolSize ?? 4
  const waitMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  const tls = tlsTries(target, (settings) => pgTlsOptions(settings, target.servername))
  const fromUrl = target.config
  const pool = new pg.Pool({
    ...fromUrl,
    ssl: tls.first,
    max: poolSize,
    connectionTimeoutMillis: waitMs,
    statement_timeout: options.statementTimeoutMs ?? (fromUrl.statement_timeout as number | undefined),
    // pg-pool destroys a client released with its query's error; transaction() destroys it too
    query_timeout: options.queryTimeoutMs,
    types,
    application_name: (fromUrl.application_name as string | undefined) ?? 'outbox',
    options: [fromUrl.options, options.asyncCommit ? '-c synchronous_commit=off' : undefined].filter(Boolean).join(' ') || undefined,
  })
  // An idle client losing its connection (server restart, pg_terminate_backend) must not
  // crash the process; the next query gets a fresh connection.
  pool.on('error', () => {})
  // A checked-out client whose connection dies emits 'error' as well as failing its query;
  // with no listener that event would crash the process with a stack instead of the query's
  // error reaching the caller as one line.
  pool.on('connect', (client) => client.on('error', () => {}))
  const poolWait = (error: unknown) => ((error as Error)?.message === POOL_QUEUE_TIMEOUT ? poolWaitTimeout(waitMs, poolSize) : error)
  // pg-pool builds each new client from its options
  const connecting = connectingVia(target, tls, signals, (ssl) => (pool.options.ssl = ssl), poolWait)
  const connect = () => connecting(() => pool.connect())
  const base = queryable(pool, connecting)
  let kysely: Awaited<ReturnType<Db['kysely']>> | undefined
  const db: Db = {
    dialect: postgres,
    safeUrl: redactUrl(url),
    ...base,
    async transaction(fn, options) {
      const client = await connect()
      try {
        const first = options?.first && postgres.render.compile(options.first)
        if (first && first.params.length) throw new TypeError('a transaction\'s first statement takes no parameters')
        const begin = (options?.snapshot ? postgres.batches.snapshotBegin : ['BEGIN']).join('; ')
        // a query without values goes as one simple-protocol message, which may hold several statements
        await client.query(first ? `${begin}; ${first.text}` : begin)
        const result = await fn(queryable(client), client)
        await client.query('COMMIT')
        if (options?.after) await queryable(client).query(options.after).catch(() => {})
        client.release()
        return result
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {})
        client.release(true) // destroyed: whatever the session held goes with it
        throw error
      }
    },
    async kysely() {
      if (!kysely) {
        const {Kysely, PostgresDialect} = await import('kysely')
        // Kysely only checks clients out and ends the pool
        const bounded = {connect: async () => destroyedAfterTimeout(await connect()), end: () => pool.end()}
        kysely = new Kysely<any>({dialect: new PostgresDialect({pool: bounded as never})})
      }
      return kysely
    },
    async hold() {
      return heldConnection(await connect())
    },
    async listen(statement, onNotify, onError) {
      // A dedicated pool client: LISTEN belongs to the session, so it must not be shared.
      // It is destroyed, not returned to the pool, when listening ends.
      const client = await connect()
      let closed = false
      const notified = () => onNotify()
      const failed = (error: Error) => {
        if (closed) return
        closed = true
        client.release(true)
        onError(error)
      }
      client.on('notification', notified)
      client.on('error', failed)
      try {
        await client.query(postgres.render.compile(statement).text)
      } catch (error) {
        closed = true
        client.release(true)
        throw error
      }
      return {
        async close() {
          if (closed) return
          closed = true
          client.off('notification', notified) // the error handler stays: it ignores errors once closed
          client.release(true)
        },
      }
    },
    async close() {
      await pool.end()
    },
  }
  // Fail now on a bad URL, login or database rather than at the first real query.
  await connecting(() => pool.query('SELECT 1'))
  return db
}

/**
 * Kysely releases a client whose query failed like any other; one whose query hit query_timeout
 * still waits for that answer, so it is destroyed instead of pooled (pool.query and
 * transaction() do so themselves).
 */
function destroyedAfterTimeout(client: PoolClient): PoolClient {
  let timedOut = false
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>
  const release = client.release.bind(client)
  return Object.assign(Object.create(client) as PoolClient, {
    query: (...args: unknown[]) => query(...args).catch((error: unknown) => {
      if ((error as Error)?.message === QUERY_TIMED_OUT) timedOut = true
      throw error
    }),
    release: (destroy?: boolean | Error) => release(destroy || timedOut),
  })
}
