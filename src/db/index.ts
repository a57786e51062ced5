// Open a connection for a URL. Drivers are imported only here, and only for the URL's dialect.
import {dialectOfUrl} from '../config.js'
import {describeDbError} from './errors.js'
import type {Db, OpenOptions} from './types.js'

export type {Db, Listener, OpenOptions, Queryable, QueryOptions, Row, TransactionOptions} from './types.js'
export {describeDbError} from './errors.js'

export async function openDb(url: string, options: OpenOptions = {}): Promise<Db> {
  const dialect = dialectOfUrl(url)
  try {
    switch (dialect.name) {
      case 'postgres':
        return await (await import('../../dialects/postgres/driver.js')).openPostgres(url, options)
      case 'mysql':
        return await (await import('../../dialects/mysql/driver.js')).openMysql(url, options)
      case 'sqlite':
        return await (await import('../../dialects/sqlite/driver.js')).openSqlite(url, options)
    }
  } catch (error) {
    throw describeDbError(error, url)
  }
}

/** Opens, runs fn, and always closes. */
export async function withDb<T>(url: string, fn: (db: Db) => Promise<T>, options?: OpenOptions): Promise<T> {
  const db = await openDb(url, options)
  try {
    return await fn(db)
  } finally {
    await db.close().catch(() => {})
  }
}
