// SQLite through better-sqlite3: WAL, a modest busy timeout (it blocks the event loop), a
// statement cache, and a mutex so nothing else runs on the connection inside a transaction.
import type BetterSqlite3 from 'better-sqlite3'
import type {Sql} from '../index.js'
import {sqlite as dialect} from './index.js'
import {redactUrl} from '../../src/core/redact.js'
import {poolWaitTimeout} from '../../src/db/errors.js'
import {requireSqliteFile, sqlitePath} from '../../src/db/url.js'
import {DEFAULT_CONNECT_TIMEOUT_MS, type Db, type OpenOptions, type Queryable, type Row} from '../../src/db/types.js'
import {importOptional} from '../../src/core/optional.js'

/**
 * Serialises async sections: the connection is single-threaded but our callers are not.
 * A waiter gives up after waitMs (a transaction kept open that long, or a db.query() awaited
 * inside db.transaction(), which would otherwise wait on itself forever).
 */
class Mutex {
  private tail: Promise<void> = Promise.resolve()
  /** sections queued or running */
  private depth = 0
  constructor(private readonly waitMs: number) {}

  async run<T>(fn: () => Promise<T> | T): Promise<T> {
    const previous = this.tail
    let release!: () => void
    this.tail = new Promise((resolve) => (release = resolve))
    const leave = () => {
      this.depth--
      release()
    }
    // the common case, nobody ahead, takes no timer
    if (this.depth++ === 0) await previous
    else await this.turn(previous, leave)
    try {
      return await fn()
    } finally {
      leave()
    }
  }

  /** Resolves when the sections ahead are done, or rejects after waitMs; those behind still wait for them. */
  private async turn(previous: Promise<void>, leave: () => void): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const gaveUp = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(poolWaitTimeout(this.waitMs)), this.waitMs)))
    try {
      await Promise.race([previous, gaveUp])
    } catch (error) {
      // our place in the queue is handed on only once the sections ahead of it are done
      void previous.then(leave)
      throw error
    } finally {
      clearTimeout(timer)
    }
  }
}

function bind(params: unknown[]): unknown[] {
  // better-sqlite3 binds numbers, strings, bigints, buffers and null; booleans become 0/1.
  return params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p === undefined ? null : p instanceof Date ? p.toISOString() : p))
}

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
  const cache = new Map<string, BetterSqlite3.Statement>()
  function prepared(text: string) {
    let statement = cache.get(text)
    if (!statement) {
      statement = database.prepare(text)
      if (cache.size > 500) cache.clear()
      cache.set(text, statement)
    }
    return statement
  }
  const direct: Queryable = {
    async query<R = Row>(statement: Sql) {
      const {text, params} = dialect.render.compile(statement)
      const s = prepared(text)
      return (s.reader ? s.all(...bind(params)) : (s.run(...bind(params)), [])) as R[]
    },
    async execute(statement: Sql) {
      const {text, params} = dialect.render.compile(statement)
      const s = prepared(text)
      if (s.reader) return s.all(...bind(params)).length
      return s.run(...bind(params)).changes
    },
  }
  const mutex = new Mutex(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS)
  let kysely: Awaited<ReturnType<Db['kysely']>> | undefined
  return {
    dialect,
    safeUrl: redactUrl(url),
    query: (statement, options) => mutex.run(() => direct.query(statement, options)),
    execute: (statement, options) => mutex.run(() => direct.execute(statement, options)),
    transaction: (fn, options) =>
      mutex.run(async () => {
        database.exec(options?.immediate === false ? 'BEGIN' : 'BEGIN IMMEDIATE')
        try {
          if (options?.first) await direct.execute(options.first)
          const result = await fn(direct)
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
