// DriverPart: how to connect to one database, and how to recognise and use the driver's own
// objects an app passes (writeEvent, Consumer). The driver package (pg, mysql2, better-sqlite3)
// is imported on the first open only, so commands that print SQL, and --help, load none.
import type {Db, OpenOptions} from '../src/db/types.js'

/** One statement's outcome on a driver's own client: its rows, and the rows it changed. */
export interface DriverResult {
  rows: Record<string, unknown>[]
  affected: number
}

/** Runs SQL text with its parameters on one of the driver's own connections. */
export type RunSql = (text: string, params: unknown[]) => Promise<DriverResult>

/** One connection of the driver's own: a pg client, a mysql2/promise connection, a better-sqlite3 Database. */
export interface DriverSession {
  /** the driver's object itself: what a Consumer's effect receives as its transaction */
  readonly native: object
  run: RunSql
  /** a synchronous driver's run: writeEvent refuses such a session, writeEventSync uses this */
  runSync?(text: string, params: unknown[]): DriverResult
  /**
   * Whether a transaction is open on it, where the driver tells without a round trip
   * (better-sqlite3's inTransaction). Undefined where it cannot: a pg client or a mysql2
   * connection outside a transaction looks like one inside, and writeEvent would autocommit.
   */
  inTransaction?(): boolean
}

/**
 * An app's own executor, recognised as this driver's: one session, or a pool of them. writeEvent
 * runs on a session inside the caller's transaction; Consumer opens its own transactions, with
 * `begin`, on a session (one at a time) or on a session checked out of the pool.
 */
export type AppExecutor = {
  /** only this database's driver makes such objects (pg); not sure: duck-typed, the caller's dialect option wins */
  sure: boolean
  /** the statement that opens a transaction (SQLite: BEGIN IMMEDIATE, the write lock up front) */
  begin: string
} & (
  | {kind: 'session'; session: DriverSession}
  | {
      kind: 'pool'
      /** a session for one transaction; release(true) destroys it, whatever it held goes with it */
      acquire(): Promise<{session: DriverSession; release(destroy: boolean): void}>
    }
)

export interface DriverPart {
  /**
   * Opens a Db for the URL (a pool, or SQLite's one connection) and checks it with a first
   * query, so a bad host, login or database fails here. Errors are the driver's own:
   * src/db/index.ts openDb describes them.
   */
  open(url: string, options?: OpenOptions): Promise<Db>
  /**
   * Refuses, before anything connects, a URL whose database is known to be missing without
   * asking a server (SQLite: the file). Undefined: only the server can tell, at open.
   */
  requireExisting?(url: string): Promise<void>
  /**
   * writeEvent's and Consumer's executor, when it is this driver's (src/db/executor.ts asks
   * each dialect in turn); undefined when it is not. Throws a UsageError for one of its objects
   * that can serve neither (a callback connection, whose failures reach nobody).
   */
  executor(executor: object): AppExecutor | undefined
  /** matches the class name of Kysely's adapter for this database: how a Kysely instance's dialect is told */
  readonly kyselyAdapter: RegExp
}

/** The driver's open(), imported when first called: its module (and the driver package) stays unloaded until then. */
export function lazyOpen(load: () => Promise<{open: DriverPart['open']}>): DriverPart['open'] {
  return async (url, options) => (await load()).open(url, options)
}

/** A method of an object of unknown type, bound to it, or undefined when it has none by that name. */
export function method(target: object, name: string): ((...args: unknown[]) => unknown) | undefined {
  const f = (target as Record<string, unknown>)[name]
  return typeof f === 'function' ? (f as (...args: unknown[]) => unknown).bind(target) : undefined
}
