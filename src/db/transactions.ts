// Consumer's transactions on whatever executor the app gave it (src/db/executor.ts tells which):
// the library's Db, a Kysely instance, or a driver's own pool or connection, whose dialect's
// driver part says how to run SQL on it and how to begin. Each transaction hands fn our
// Queryable on it and the app's own transaction object, so the effect is plain app code.
import type {Kysely, Transaction} from 'kysely'
import {DIALECTS, type AppExecutor, type Dialect, type DialectName, type DriverSession} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'
import {kyselyRun, recogniseExecutor} from './executor.js'
import {Mutex} from './mutex.js'
import {queryableOn} from './queryable.js'
import type {Db, Queryable, TransactionHost, TransactionOptions} from './types.js'

/**
 * What the effect receives for an executor E: a Db's Queryable, a Kysely instance's Transaction,
 * a pool's connection (pg PoolClient, mysql2/promise PoolConnection), else E itself (a pg Client,
 * a mysql2/promise connection, a better-sqlite3 Database: the transaction runs on it).
 */
export type TransactionOf<E> = 0 extends 1 & E
  ? any
  : E extends Db
    ? Queryable
    : E extends Kysely<infer DB>
      ? Transaction<DB>
      : E extends {getConnection(): Promise<infer C>}
        ? C
        : E extends {idleCount: number; connect(callback: (error: any, client: infer C, done: any) => void): void}
          ? NonNullable<C>
          : E

const EXECUTORS = 'Pass a pg Pool or Client, a mysql2/promise pool or connection, a Kysely instance, a better-sqlite3 Database, or a Db from openDb'

/** The host of Consumer's transactions on `executor`; refuses, now, what cannot hold them. */
export function transactionHost(executor: object, wanted?: DialectName): TransactionHost {
  const found = recogniseExecutor(executor, wanted, EXECUTORS)
  if (found.kind === 'db') return dbHost(found.db, found.driver)
  const dialect = DIALECTS[found.dialect]
  if (found.kind === 'kysely') {
    if (found.inTransaction) throw new UsageError('Consumer was given a Kysely transaction', 'Pass the Kysely instance: Consumer opens a transaction per event, and its effect gets that Transaction')
    return kyselyHost(dialect, found.kysely)
  }
  return found.executor.kind === 'pool' ? poolHost(dialect, found.executor) : sessionHost(dialect, found.executor)
}

function dbHost(db: Db, driver: boolean): TransactionHost {
  return {
    dialect: db.dialect,
    safeUrl: db.safeUrl,
    query: (statement) => db.query(statement),
    transaction: (fn, options) => db.transaction((q, native) => fn(q, driver ? native : q), options),
  }
}

type Options = Pick<TransactionOptions, 'after'> | undefined

/**
 * BEGIN .. COMMIT on one session, ROLLBACK when fn throws; `after` once it ended. `broken` is
 * told when the session failed to begin or to roll back: a pool destroys it then.
 */
async function onSession<T>(dialect: Dialect, begin: string, session: DriverSession, fn: (q: Queryable, tx: unknown) => Promise<T>, options: Options, broken = () => {}): Promise<T> {
  const q = queryableOn(dialect, session.run)
  await session.run(begin, []).catch((error) => {
    broken()
    throw error
  })
  try {
    const result = await fn(q, session.native)
    await session.run('COMMIT', [])
    return result
  } catch (error) {
    await session.run('ROLLBACK', []).catch(broken)
    throw error
  } finally {
    if (options?.after) await q.query(options.after).catch(() => {})
  }
}

/**
 * One connection (a pg Client, a mysql2 connection, a better-sqlite3 Database): one transaction
 * on it at a time, so handlers running at once take turns, through a mutex per connection that
 * every Consumer on it shares. It must not be inside a transaction of the app's when given.
 */
const SESSION_TURNS = new WeakMap<object, Mutex>()

function sessionHost(dialect: Dialect, executor: AppExecutor & {kind: 'session'}): TransactionHost {
  const {session, begin} = executor
  let turns = SESSION_TURNS.get(session.native)
  if (!turns) SESSION_TURNS.set(session.native, (turns = new Mutex(Infinity)))
  const mutex = turns
  const q = queryableOn(dialect, session.run)
  return {
    dialect,
    query: (statement) => mutex.run(() => q.query(statement)),
    transaction: (fn, options) => mutex.run(() => onSession(dialect, begin, session, fn, options)),
  }
}

/** A pool (pg Pool, mysql2/promise pool): a connection checked out per transaction. */
function poolHost(dialect: Dialect, executor: AppExecutor & {kind: 'pool'}): TransactionHost {
  const checkedOut = async <T>(fn: (session: DriverSession, broken: () => void) => Promise<T>): Promise<T> => {
    const {session, release} = await executor.acquire()
    let destroy = false
    try {
      return await fn(session, () => (destroy = true))
    } finally {
      release(destroy)
    }
  }
  return {
    dialect,
    query: (statement) => checkedOut((session) => queryableOn(dialect, session.run).query(statement)),
    transaction: (fn, options) => checkedOut((session, broken) => onSession(dialect, executor.begin, session, fn, options, broken)),
  }
}

/**
 * A Kysely instance: db.transaction().execute(trx => ...), our SQL past its plugins (a
 * CamelCasePlugin would rename the columns we read). A lock that outlives the transaction is
 * given back on the same connection: db.connection() holds one for both.
 */
function kyselyHost(dialect: Dialect, kysely: Kysely<any>): TransactionHost {
  const q = (k: Kysely<any>) => queryableOn(dialect, kyselyRun(k.withoutPlugins()))
  const inTransaction = <T>(k: Kysely<any>, fn: (q: Queryable, tx: unknown) => Promise<T>) => k.transaction().execute((trx) => fn(q(trx), trx))
  return {
    dialect,
    query: (statement) => q(kysely).query(statement),
    async transaction(fn, options) {
      const after = options?.after
      if (!after) return inTransaction(kysely, fn)
      return kysely.connection().execute(async (connection) => {
        try {
          return await inTransaction(connection, fn)
        } finally {
          await q(connection).query(after).catch(() => {})
        }
      })
    },
  }
}
