// Open a connection for a URL: the URL's dialect opens it (its driver module is imported then,
// and only that one), and a failure becomes one line (describeDbError).
import {dialectOfUrl} from '../config.js'
import {describeDbError} from './errors.js'
import type {Db, OpenOptions} from './types.js'

export type {Db, HeldConnection, Listener, OpenOptions, Queryable, QueryOptions, Row, TransactionOptions} from './types.js'
export {describeDbError, isConnectionTrouble} from './errors.js'

export async function openDb(url: string, options: OpenOptions = {}): Promise<Db> {
  const dialect = await dialectOfUrl(url)
  try {
    return await dialect.driver.open(url, options)
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
