// SQLite through better-sqlite3: WAL, a modest busy timeout (it blocks the event loop), a
// statement cache (statements.ts), and a mutex so nothing else runs on the connection inside a transaction.
import type BetterSqlite3 from 'better-sqlite3'
import {sqlite as dialect} from './index.js'
import {runSync} from './statements.js'
import {redactUrl} from '../../src/core/redact.js'
import {queryableOn} from '../../src/db/queryable.js'
import {Mutex} from '../../src/db/mutex.js'
import {requireSqliteFile, sqlitePath} from '../../src/db/url.js'
import {DEFAULT_CONNECT_TIMEOUT_MS, type Db, type OpenOptions} from '../../src/db/types.js'
import {importOptional} from '../../src/core/optional.js'

export async function open(url: string, options: OpenOptions = {}): Promise<Db> {
  const Database = (await importOptional('better-sqlite3', 'a sqlite: URL', () => import('better-sqlite3'))).default
  const path = sqlitePath(url)
  const mustExist = Boolean(options.mustExist || options.readOnly) && path !== ':memory:'
  if (mustExist) requireSqliteFile(url)
  const database: BetterSqlite3.Database = new Database(path, {timeout: options.busyTimeoutMs ?? 5000, readonly: Boolean(options.readOnly), fileMustExist: mustExist})
  if (!options.readOnly) {
    database.pragma('journal_mode = WAL')
    // NORMAL is durable across process crashes in WAL mode; a lost mark after power loss only
    // means a resend, which consumers dedupe.
    database.pragma('synchronous = NORMAL')
  }
  const direct = queryableOn(dialect, async (text, params) => runSync(database, text, params))
  const mutex = new Mutex(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS)
  let kysely: Awaited<ReturnType<Db['kysely']>> | undefined
  return {
    dialect,
    safeUrl: redactUrl(url),
    query: (statement, options) => mutex.run(() => direct.query(statement, options)),
    execute: (statement, options) => mutex.run(() => direct.execute(statement, options)),
    transaction: (fn, options) =>
      mutex.run(async () => {
        const begin = options?.snapshot ? dialect.batches.snapshotBegin : [options?.immediate === false ? 'BEGIN' : 'BEGIN IMMEDIATE']
        for (const statement of begin) database.exec(statement)
        try {
          if (options?.first) await direct.execute(options.first)
          const result = await fn(direct, database)
          database.exec('COMMIT')
          if (options?.after) await direct.query(options.after).catch(() => {})
          return result
        } catch (error) {
          if (database.inTransaction) database.exec('ROLLBACK')
          throw error
        }
      }),
    async kysely() {
      if (!kysely) {
        const {Kysely, SqliteDialect} = await import('kysely')
        kysely = new Kysely<any>({dialect: new SqliteDialect({database})})
      }
      return kysely
    },
    async close() {
      database.close()
    },
  }
}
