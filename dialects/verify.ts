// VerifyPart: what `outbox verify` (src/verify/) asks of a live server, and what it should
// expect of this database's claim.
import type {TableNames} from './dialect.js'
import type {Sql} from './sql.js'

/** The verify checks that may not apply to a database (src/verify/ check ids). */
export type OptionalCheck = 'isolation' | 'index' | 'producer'

export interface VerifyPart {
  /** server version string as column `version` */
  serverVersion(): Sql
  /** whether this server version has SKIP LOCKED */
  supportsSkipLocked(version: string): boolean
  /** whether this server version can run the claim as designed, in words a user can act on */
  claimSupport(version: string): {ok: boolean; detail: string}
  /**
   * How two claims at once keep apart, which decides what the second-session check expects:
   * 'skip-locked': row locks, and a second claim skips the rows another open transaction holds,
   * taking the next ones at once (PostgreSQL, MySQL/MariaDB); 'single-writer': no row locks, a
   * second writer waits for the first to commit, then claims (SQLite).
   */
  readonly concurrency: 'skip-locked' | 'single-writer'
  /**
   * Checks that do not apply here, with the reason verify reports for them (n/a, never a
   * failure). Default: every check runs.
   */
  readonly notApplicable: Partial<Record<OptionalCheck, string>>
  /**
   * Why verify cannot run on a URL the database itself accepts, and what to do instead
   * (SQLite's in-memory database is private to one connection; verify needs several).
   * Undefined: every URL the driver opens will do.
   */
  urlProblem?(url: string): {message: string; hint: string} | undefined
  /** run inside a transaction: a lock wait gives up after ms instead of blocking (undefined: SQLite's busy timeout does it) */
  lockTimeout(ms: number): Sql | undefined
  /**
   * the current transaction's isolation level as column `level` (MySQL/MariaDB: the variable's
   * name differs); undefined exactly where notApplicable.isolation says why
   */
  isolationLevel(version: string): Sql | undefined
  /**
   * What a claim run at a level other than READ COMMITTED breaks here, and what to check (the
   * isolation check's failure says it). Undefined where the isolation check does not apply.
   */
  readonly notReadCommitted?: string
  /** the statement's plan (EXPLAIN / EXPLAIN QUERY PLAN) */
  explain(statement: Sql): Sql
  /**
   * The statement run with the server counting the rows each table access reads, and
   * `rowsRead`: how many it read from `table` (PostgreSQL: EXPLAIN (ANALYZE, FORMAT JSON),
   * rows returned plus rows removed by filters, times loops; MariaDB: ANALYZE FORMAT=JSON,
   * r_rows times r_loops). Undefined on SQLite, which counts none (its plan names the index).
   * How the tests and the benchmark show that status reads the backlog, not the history.
   */
  readonly analyzeRows?: {statement(statement: Sql): Sql; rowsRead(result: Record<string, unknown>[], table: string): number}
  /** refresh the planner's statistics for the outbox table */
  analyze(names: TableNames): Sql
  /** drop the outbox table if it exists (verify's scratch table) */
  dropOutbox(names: TableNames): Sql
}
