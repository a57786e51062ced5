// DriverPart: how to connect to one database and how to recognise its driver's own client
// objects. The driver package (pg, mysql2, better-sqlite3) is imported on the first open only,
// so commands that print SQL, and --help, load none.
import type {Db, OpenOptions} from '../src/db/types.js'

/** Runs SQL text with its parameters on a caller's client (writeEvent inside the caller's transaction). */
export type RunSql = (text: string, params: unknown[]) => Promise<unknown>

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
   * writeEvent's executor, when it is a client of this driver: how to run SQL on it, and
   * `sure`: the client speaks only this database (a pg client). Not sure: a duck-typed
   * query/execute pair, where the caller's `dialect` option wins. Undefined: not this
   * driver's client. Throws a UsageError for a client of this driver that cannot hold the
   * caller's transaction (a pool, a callback connection, a synchronous one).
   */
  client(executor: object): {run: RunSql; sure: boolean} | undefined
  /** matches the class name of Kysely's adapter for this database: how writeEvent tells a Kysely transaction's dialect */
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
