// MySQL / MariaDB through a mysql2 pool. Every connection runs at READ COMMITTED in UTC:
// the claim's gap locks would otherwise block producers' INSERTs (DIALECTS.md).
import type {Pool as CallbackPool, PoolConnection as CallbackConnection} from 'mysql2'
import type {PoolConnection} from 'mysql2/promise'
import {sql, type Sql} from '../index.js'
import {mysql as dialect} from './index.js'
import {READ_COMMITTED} from './relay.js'
import {boundAnswers} from './query-timeout.js'
import {mysqlTarget, mysqlTlsOptions} from './url.js'
import {redactUrl} from '../../src/core/redact.js'
import {poolWaitTimeout} from '../../src/db/errors.js'
import {connecting as connectingVia, tlsTries, type TransportSignals} from '../../src/db/transport.js'
import {DEFAULT_CONNECT_TIMEOUT_MS, type Db, type OpenOptions, type QueryOptions, type Queryable, type Row} from '../../src/db/types.js'
import {importOptional} from '../../src/core/optional.js'

function queryable(target: PoolConnection): Queryable {
  async function run(statement: Sql, options?: QueryOptions) {
    const {text, params} = dialect.render.compile(statement)
    // execute() keeps a server-side prepared statement per connection; query() interpolates.
    const [result] = options?.prepare ? await target.execute(text, params as never) : await target.query(text, params)
    return result
  }
  return {
    async query<R = Row>(statement: Sql, options?: QueryOptions) {
      return (await run(statement, options)) as R[]
    },
    async execute(statement: Sql, options?: QueryOptions) {
      return ((await run(statement, options)) as {affectedRows?: number}).affectedRows ?? 0
    },
  }
}

/**
 * pool.getConnection(), but a wait in the pool's queue (every connection checked out) ends
 * after waitMs: mysql2 itself waits forever. A connection that comes free after the caller gave
 * up goes straight back to the pool. Opening a new connection is bounded by connectTimeout.
 */
function boundedAcquire(pool: CallbackPool, waitMs: number, poolSize: number): Promise<CallbackConnection> {
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined
    let gaveUp = false
    // mysql2 emits 'enqueue' synchronously inside getConnection when the caller has to wait
    const queued = () => {
      timer = setTimeout(() => {
        gaveUp = true
        reject(poolWaitTimeout(waitMs, poolSize))
      }, waitMs)
    }
    pool.once('enqueue', queued)
    try {
      pool.getConnection((error, connection) => {
        clearTimeout(timer)
        if (!gaveUp) return error ? reject(error) : resolve(connection)
        if (!error) connection.release()
      })
    } finally {
      pool.off('enqueue', queued)
    }
  })
}

/** MariaDB bounds every statement (max_statement_time, seconds); MySQL 8 only SELECTs (max_execution_time, ms). */
function statementTimeout(connection: CallbackConnection, ms: number): string {
  const version = String((connection as {_handshakePacket?: {serverVersion?: string}})._handshakePacket?.serverVersion ?? '')
  const mysql = version !== '' && !/mariadb/i.test(version)
  return mysql ? `SET SESSION max_execution_time = ${Math.ceil(ms)}` : `SET SESSION max_statement_time = ${ms / 1000}`
}

// the server's handshake lacked the SSL flag while TLS was asked for (MySQL has no allow: nothing refuses plain text here)
const signals = (error: unknown): TransportSignals => ({noTlsOffered: (error as {code?: unknown})?.code === 'HANDSHAKE_NO_SSL_SUPPORT', plainRefused: false})

export async function open(url: string, options: OpenOptions = {}): Promise<Db> {
  const target = mysqlTarget(url)
  const tls = tlsTries(target, () => mysqlTlsOptions(target))
  const mysql2 = (await importOptional('mysql2', 'a mysql:// or mariadb:// URL', () => import('mysql2'))).default
  // One callback pool; Kysely and our queries check its connections out through acquire().
  const poolSize = options.poolSize ?? 4
  const waitMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  const callbackPool = mysql2.createPool({
    ...target.config,
    ssl: tls.first || undefined,
    connectionLimit: poolSize,
    connectTimeout: waitMs,
    timezone: 'Z',
    supportBigNumbers: true,
    decimalNumbers: true,
    multipleStatements: false,
    // affectedRows counts changed rows, not matched ones: a duplicate inbox insert reads as 0
    flags: ['-FOUND_ROWS'],
  })
  callbackPool.on('connection', (connection) => {
    connection.query(READ_COMMITTED)
    connection.query("SET time_zone = '+00:00'")
    if (options.statementTimeoutMs) connection.query(statementTimeout(connection, options.statementTimeoutMs), () => {})
    if (options.queryTimeoutMs) boundAnswers(connection, options.queryTimeoutMs)
  })
  // each new connection copies the pool's connection config
  const connectionConfig = (callbackPool as unknown as {config: {connectionConfig: {ssl: unknown}}}).config.connectionConfig
  const connecting = connectingVia(target, tls, signals, (ssl) => (connectionConfig.ssl = ssl || undefined))
  const acquire = () => connecting(() => boundedAcquire(callbackPool, waitMs, poolSize))
  /** pool.query/execute with a bounded wait: one statement on a connection of the pool */
  async function onPool<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const connection = (await acquire()).promise()
    try {
      return await fn(queryable(connection))
    } finally {
      connection.release()
    }
  }
  let kysely: Awaited<ReturnType<Db['kysely']>> | undefined
  const db: Db = {
    dialect,
    safeUrl: redactUrl(url),
    query: (statement, options) => onPool((q) => q.query(statement, options)),
    execute: (statement, options) => onPool((q) => q.execute(statement, options)),
    async transaction(fn, options) {
      const connection = (await acquire()).promise()
      try {
        for (const begin of options?.snapshot ? dialect.batches.snapshotBegin : ['START TRANSACTION']) await connection.query(begin)
        const tx = queryable(connection)
        if (options?.first) await tx.execute(options.first)
        const result = await fn(tx, connection)
        await connection.query('COMMIT')
        if (options?.after) await tx.query(options.after).catch(() => {})
        connection.release()
        return result
      } catch (error) {
        await connection.query('ROLLBACK').catch(() => {})
        connection.destroy() // whatever the session held (GET_LOCK) goes with it
        throw error
      }
    },
    async kysely() {
      if (!kysely) {
        const {Kysely, MysqlDialect} = await import('kysely')
        // Kysely only checks connections out and ends the pool
        const bounded = {
          getConnection: (cb: (error: unknown, connection?: CallbackConnection) => void) => acquire().then((c) => cb(null, c), (error) => cb(error)),
          end: (cb: (error: unknown) => void) => callbackPool.end(cb),
        }
        kysely = new Kysely<any>({dialect: new MysqlDialect({pool: bounded as never})})
      }
      return kysely
    },
    async close() {
      await callbackPool.promise().end()
    },
  }
  await db.query(sql`SELECT 1`)
  return db
}
