// MySQL / MariaDB through a mysql2 pool. Every connection runs at READ COMMITTED in UTC:
// the claim's gap locks would otherwise block producers' INSERTs (DIALECTS.md).
import type {Pool, PoolConnection} from 'mysql2/promise'
import type {Sql} from '../../dialects/index.js'
import {mysql as dialect, READ_COMMITTED} from '../../dialects/mysql.js'
import {redactUrl} from '../config.js'
import {checkNetworkUrl} from './url.js'
import type {Db, OpenOptions, QueryOptions, Queryable, Row} from './types.js'

function queryable(target: Pool | PoolConnection): Queryable {
  async function run(statement: Sql, options?: QueryOptions) {
    const {text, params} = dialect.compile(statement)
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

export async function openMysql(url: string, options: OpenOptions = {}): Promise<Db> {
  const parsed = checkNetworkUrl(url)
  const mysql2 = (await import('mysql2')).default
  // The callback pool serves Kysely; .promise() serves us. Same connections.
  const callbackPool = mysql2.createPool({
    host: parsed.hostname,
    port: parsed.port ? Number(parsed.port) : 3306,
    user: decodeURIComponent(parsed.username || 'root'),
    password: decodeURIComponent(parsed.password),
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || undefined,
    connectionLimit: options.poolSize ?? 4,
    connectTimeout: options.connectTimeoutMs ?? 10_000,
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
    if (options.statementTimeoutMs) connection.query(`SET SESSION max_statement_time = ${options.statementTimeoutMs / 1000}`, () => {})
  })
  const pool = callbackPool.promise()
  let kysely: Awaited<ReturnType<Db['kysely']>> | undefined
  const db: Db = {
    dialect,
    safeUrl: redactUrl(url),
    ...queryable(pool),
    async transaction(fn) {
      const connection = await pool.getConnection()
      try {
        await connection.query('START TRANSACTION')
        const result = await fn(queryable(connection))
        await connection.query('COMMIT')
        connection.release()
        return result
      } catch (error) {
        await connection.query('ROLLBACK').catch(() => {})
        connection.destroy()
        throw error
      }
    },
    async kysely() {
      if (!kysely) {
        const {Kysely, MysqlDialect} = await import('kysely')
        kysely = new Kysely<any>({dialect: new MysqlDialect({pool: callbackPool as never})})
      }
      return kysely
    },
    async close() {
      await pool.end()
    },
  }
  await pool.query('SELECT 1')
  return db
}
