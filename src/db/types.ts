import type {Kysely} from 'kysely'
import type {Dialect, Sql} from '../../dialects/index.js'

export type Row = Record<string, unknown>

export interface QueryOptions {
  /** reuse a server-side prepared statement (hot paths: claim, mark) */
  prepare?: boolean
}

export interface Queryable {
  query<R = Row>(statement: Sql, options?: QueryOptions): Promise<R[]>
  /** rows changed by an INSERT/UPDATE/DELETE */
  execute(statement: Sql, options?: QueryOptions): Promise<number>
}

export interface TransactionOptions {
  /** SQLite: BEGIN IMMEDIATE takes the write lock up front (default true) */
  immediate?: boolean
  /**
   * a read-only transaction whose reads all see one snapshot, opened by the dialect's
   * batches.snapshotBegin (REPEATABLE READ; SQLite: deferred): for figures read by several
   * statements that must add up (status). `immediate` does not apply.
   */
  snapshot?: boolean
  /**
   * a statement without parameters run first in the transaction (a SET LOCAL); PostgreSQL
   * sends it with BEGIN in one round trip
   */
  first?: Sql
  /**
   * run on the same connection once the transaction has ended (committed or rolled back), its
   * error ignored: gives back what outlives a transaction (MySQL's GET_LOCK)
   */
  after?: Sql
}

export interface Db extends Queryable {
  readonly dialect: Dialect
  /** the URL with its password masked */
  readonly safeUrl: string
  /**
   * One transaction on one connection; committed when fn resolves, rolled back when it throws.
   * fn's `driver` is the driver's own object the transaction runs on (a pg client, a
   * mysql2/promise connection, the better-sqlite3 Database): what `outbox consume` hands a handler.
   */
  transaction<T>(fn: (tx: Queryable, driver: object) => Promise<T>, options?: TransactionOptions): Promise<T>
  /** a Kysely instance over the same pool, for portable queries */
  kysely(): Promise<Kysely<any>>
  /**
   * PostgreSQL: runs the LISTEN statement on a connection of its own and calls onNotify for
   * each notification; onError when that connection is lost (the caller may listen again).
   */
  listen?(statement: Sql, onNotify: () => void, onError: (error: Error) => void): Promise<Listener>
  /** PostgreSQL: a connection of the pool held until released (the transaction lease) */
  hold?(): Promise<HeldConnection>
  close(): Promise<void>
}

/**
 * Where Consumer opens its transactions (src/db/transactions.ts): a Db, or an app's own pool,
 * connection or Kysely instance. fn gets `q`, which runs our SQL (the inbox rows, the named lock)
 * in the transaction, and `tx`, the object the app's effect receives: a Db's Queryable, the pg
 * client inside BEGIN, the mysql2/promise connection, the Kysely Transaction, the better-sqlite3
 * Database.
 */
export interface TransactionHost<Tx = unknown> {
  readonly dialect: Dialect
  /** the URL with its password masked, where there is one (a Db) */
  readonly safeUrl?: string
  /** one transaction; `after` runs on its connection once it ended, committed or not (MySQL's RELEASE_LOCK) */
  transaction<T>(fn: (q: Queryable, tx: Tx) => Promise<T>, options?: Pick<TransactionOptions, 'after'>): Promise<T>
  /** one statement outside a transaction */
  query<R = Row>(statement: Sql): Promise<R[]>
}

/**
 * One pooled connection kept across statements (Db.hold): the relay's transaction lease holds
 * its claim's transaction open on it while the batch is published.
 */
export interface HeldConnection {
  /** the statements in one round trip, values inlined (PostgreSQL's simple protocol): each one's rows and rows changed */
  script(statements: Sql[]): Promise<{rows: Row[]; affected: number}[]>
  /** back to the pool; broken: destroyed instead, and whatever its session held goes with it */
  release(broken?: boolean): void
}

export interface Listener {
  close(): Promise<void>
}

/** OpenOptions.connectTimeoutMs when not given: connecting, and waiting for a free pooled connection */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

export interface OpenOptions {
  /** pool size (default 4) */
  poolSize?: number
  /**
   * connect timeout (default 10s), and also the longest wait for a free pooled connection:
   * query(), execute(), transaction() and Kysely reject with "no free connection in the pool
   * after N s" once every connection stayed checked out that long (pg-pool has one setting,
   * connectionTimeoutMillis, for both; MySQL and SQLite get the same bound from us).
   */
  connectTimeoutMs?: number
  /**
   * per-statement timeout on the server (default none): PostgreSQL statement_timeout, MariaDB
   * max_statement_time. MySQL 8 has no max_statement_time; there it sets max_execution_time,
   * which bounds read-only SELECTs only (writes run unbounded). A statement over the limit
   * rejects; describeDbError reports it as "a statement ran longer than the statement timeout".
   */
  statementTimeoutMs?: number
  /**
   * client-side bound on every statement's answer (default none): a connection whose server
   * stops answering without a reset (a black hole, a hung network) would otherwise wait
   * forever. The statement rejects and its connection is destroyed, never pooled again
   * (pg query_timeout; mysql2's per-query timeout). SQLite has no network: not used there.
   */
  queryTimeoutMs?: number
  /**
   * PostgreSQL: commit without waiting for the WAL flush on these connections only
   * (synchronous_commit = off). For the relay's claims and marks this is safe: one lost in
   * a server crash means a resend, which consumers dedupe. Never for producers.
   */
  asyncCommit?: boolean
  /** SQLite busy timeout (default 5s) */
  busyTimeoutMs?: number
  /**
   * SQLite: the database file must exist already (a mistyped path is an error, not a new empty
   * database left behind). Commands that need the outbox table set it; init --apply does not.
   */
  mustExist?: boolean
  /**
   * SQLite: open read-only (status, failed): the command cannot change the file, nor its
   * journal mode (a read/write open switches it to WAL for good). Implies mustExist.
   */
  readOnly?: boolean
}
