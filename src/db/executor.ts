// What an app hands writeEvent or Consumer, recognised once for both: the library's Db, a Kysely
// instance or transaction, or a driver's own connection or pool (each dialect's driver part
// tells its own: dialects/<dialect>/driver.ts). writeEvent wants one inside the caller's
// transaction; Consumer opens transactions of its own on it (src/db/transactions.ts).
import type {Kysely} from 'kysely'
import {DIALECTS, type AppExecutor, type DialectName, type RunSql} from '../../dialects/index.js'
import {method} from '../../dialects/driver.js'
import {UsageError} from '../core/errors.js'
import type {Db} from './types.js'

export type Recognised =
  /** driver: the effect gets the driver's own object (driverTransactions), else our Queryable */
  | {kind: 'db'; db: Db; driver: boolean}
  | {kind: 'kysely'; dialect: DialectName; kysely: Kysely<any>; inTransaction: boolean}
  | {kind: 'app'; dialect: DialectName; executor: AppExecutor}

class DriverTransactions {
  constructor(readonly db: Db) {}
}

/**
 * The Db, as an executor whose transactions hand Consumer's effect the driver's own object (a pg
 * client inside BEGIN, a mysql2/promise connection, the better-sqlite3 Database) instead of our
 * Queryable: `outbox consume` opens a Db for its URL, and a handler written for the app's own
 * pool runs unchanged under it.
 */
export function driverTransactions(db: Db): object {
  return new DriverTransactions(db)
}

function isDb(executor: object): executor is Db {
  const db = executor as Partial<Db>
  return typeof db.safeUrl === 'string' && typeof db.transaction === 'function' && typeof db.kysely === 'function' && typeof db.dialect?.render === 'object'
}

/** Tells the executor's kind and dialect; `wanted` (the caller's dialect option) wins where the shape is a guess. */
export function recogniseExecutor(executor: unknown, wanted: DialectName | undefined, hint: string): Recognised {
  if (typeof executor !== 'object' || executor === null) throw new UsageError('unsupported executor', hint)
  if (executor instanceof DriverTransactions) return {kind: 'db', db: executor.db, driver: true}
  if (isDb(executor)) return {kind: 'db', db: executor, driver: false}
  if (method(executor, 'executeQuery') && method(executor, 'selectFrom')) {
    const kysely = executor as Kysely<any>
    const adapter = kysely.getExecutor().adapter.constructor.name
    const dialect = wanted ?? (Object.keys(DIALECTS) as DialectName[]).find((name) => DIALECTS[name].driver.kyselyAdapter.test(adapter))
    if (!dialect) throw new UsageError('cannot tell the Kysely dialect', `Pass {dialect: ${Object.keys(DIALECTS).map((name) => `'${name}'`).join(' | ')}}`)
    return {kind: 'kysely', dialect, kysely, inTransaction: kysely.isTransaction}
  }
  for (const dialect of Object.values(DIALECTS)) {
    const found = dialect.driver.executor(executor)
    if (found) return {kind: 'app', dialect: wanted && !found.sure ? wanted : dialect.name, executor: found}
  }
  throw new UsageError('unsupported executor', hint)
}

/** Runs SQL text on a Kysely instance or transaction: a query Kysely did not build, passed through as compiled. */
export function kyselyRun(kysely: Kysely<any>): RunSql {
  return async (text, parameters) => {
    const result = await kysely.executeQuery({sql: text, parameters, query: {kind: 'RawNode'}, queryId: {queryId: 'outbox'}} as never)
    return {rows: result.rows as Record<string, unknown>[], affected: Number(result.numAffectedRows ?? 0)}
  }
}
