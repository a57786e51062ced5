// The Dialect interface: everything that differs between databases, and nothing else.
import type {BatchesPart} from './batches.js'
import type {Compiled, Sql} from './sql.js'

export type {BatchesPart, SummaryWanted} from './batches.js'

export type DialectName = 'postgres' | 'mysql' | 'sqlite'

/** Already-validated, unquoted identifiers. */
export interface TableNames {
  schema?: string
  outbox: string
  inbox: string
  archive: string
}

export interface DdlOptions {
  inbox: boolean
  archive: boolean
}

export type DdlObjectKind = 'schema' | 'table' | 'index'

/** One idempotent DDL statement and the object it creates (so `init --apply` can report). */
export interface DdlStatement {
  kind: DdlObjectKind
  name: string
  /** the table an index belongs to */
  table?: string
  sql: string
  /**
   * An index its table's CREATE TABLE makes already (MySQL, which has no CREATE INDEX IF NOT
   * EXISTS): applied only to a table that exists without it, never printed in the script.
   */
  repairOnly?: boolean
}

export interface ClaimOptions {
  batch: number
  leaseMs: number
  owner: string
  /** never claim an event while an older event of the same aggregate is unpublished */
  ordering?: 'none' | 'aggregate'
}

/** The claim, as the relay runs it. */
export type ClaimPlan =
  /**
   * one statement that locks, leases and returns the rows (PostgreSQL, SQLite); `ordered`: in
   * claim order, (created_at, id) (PostgreSQL sorts them; SQLite's RETURNING has no order, and
   * its created_at is fixed-width text, so the relay sorts on that)
   */
  | {kind: 'update-returning'; statement: Sql; ordered: boolean}
  /**
   * MySQL/MariaDB: inside one READ COMMITTED transaction, SELECT ... FOR UPDATE SKIP LOCKED,
   * then UPDATE the selected ids, then COMMIT.
   */
  | {kind: 'lock-then-update'; session: Sql[]; lock: Sql; update: (ids: string[]) => Sql}

export interface RetryInput {
  id: string
  owner: string
  delayMs: number
  error: string
  /** the event becomes failed when its attempts reach this (0 = fail now) */
  maxAttempts: number
  /**
   * The broker took none of the batch (it is down): the claim's attempt is given back and the
   * event never fails for it, so an outage does not use up the backlog's attempts.
   */
  refund?: boolean
}

export interface NewEventRow {
  id: string
  eventType: string
  aggregateType: string | null
  aggregateId: string
  aggregateVersion: number | null
  payload: string
  headers: string | null
}

export interface InboxRow {
  consumer: string
  eventId: string
  aggregateType: string | null
  aggregateId: string | null
  aggregateVersion: number | null
}

export interface Dialect {
  readonly name: DialectName
  /**
   * A lock by name that holds until the end of the transaction it is taken in (runUnderLock):
   * `init --apply` run by a deploy's replicas at once, consumers checking one aggregate's
   * versions. PostgreSQL: a transaction-level advisory lock; MySQL: GET_LOCK, a session lock
   * given back by `release` after the commit. SQLite has none: its writers take turns already
   * (BEGIN IMMEDIATE).
   */
  readonly namedLock?: NamedLock
  /** what `outbox status`, `failed`, `replay` and `archive` need of the database (dialects/batches.ts) */
  readonly batches: BatchesPart
  /** Writing SQL text for this database: quoting, literals, placeholders and its clock. */
  readonly render: RenderPart
  /** The tables and indexes `outbox init` creates, and how to see which exist. */
  readonly ddl: DdlPart
  /** The relay's statements: claim a batch under a lease, mark it published, retry or fail one event, give leases back. */
  readonly relay: RelayPart
  /** What producers and consumers write: the outbox row, and the inbox row that deduplicates. */
  readonly events: EventsPart
  /** What `outbox verify` asks of a live server (src/verify/). */
  readonly verify: VerifyPart
  /** Driver errors the code must tell apart, by their meaning rather than their codes. */
  readonly errors: ErrorsPart
}

/** Dialect.render: Writing SQL text for this database: quoting, literals, placeholders and its clock. */
export interface RenderPart {
  /** longest identifier the database accepts */
  readonly maxIdentifierLength: number
  quoteIdent(name: string): string
  /** schema-qualified, quoted table reference */
  table(names: TableNames, which: keyof Omit<TableNames, 'schema'>): string
  placeholder(index: number): string
  /** a value as an escaped SQL literal, for printing runnable SQL */
  literal(value: unknown): string
  compile(fragment: Sql): Compiled
  inline(fragment: Sql): string
  /** the database clock, as used by leases (never the host clock) */
  readonly now: string
  /** a Date as the parameter this dialect's timestamp columns compare against */
  timeParam(date: Date): unknown
  /** text the database stores for a timestamp column, back to a Date */
  parseTime(value: unknown): Date | null
}

/** Dialect.ddl: The tables and indexes `outbox init` creates, and how to see which exist. */
export interface DdlPart {
  statements(names: TableNames, options: DdlOptions): DdlStatement[]
  /** a query returning one row per column of the three tables that exist: {table_name, column_name} */
  existingColumns(names: TableNames): Sql
  /** a query returning one row per existing object: {kind, name} */
  existingObjects(names: TableNames): Sql
}

/** Dialect.relay: The relay's statements: claim a batch under a lease, mark it published, retry or fail one event, give leases back. */
export interface RelayPart {
  claim(names: TableNames, options: ClaimOptions): ClaimPlan
  /** the claim as one script, values inlined, runnable as-is in the database's own client */
  claimScript(names: TableNames, options: ClaimOptions): string
  markPublished(names: TableNames, ids: string[]): Sql
  retry(names: TableNames, input: RetryInput): Sql
  /** give back leases that were claimed but not sent (graceful stop) */
  release(names: TableNames, ids: string[], owner: string): Sql
  /** PostgreSQL only: a NOTIFY sent at commit that wakes listening relays (a hint; polling stays the truth) */
  notify?(channel: string): Sql
  /** the LISTEN statement matching notify() */
  listen?(channel: string): Sql
}

/** Dialect.events: What producers and consumers write: the outbox row, and the inbox row that deduplicates. */
export interface EventsPart {
  insertEvent(names: TableNames, row: NewEventRow): Sql
  /** record (consumer, event id) in the inbox; affects 0 rows when it was already there */
  inboxInsert(names: TableNames, row: InboxRow): Sql
  /** highest aggregate_version this consumer has applied for the aggregate (column max_version) */
  inboxMaxVersion(names: TableNames, consumer: string, aggregateType: string | null, aggregateId: string): Sql
}

/** Dialect.verify: What `outbox verify` asks of a live server (src/verify/). */
export interface VerifyPart {
  /** server version string and whether it supports SKIP LOCKED */
  serverVersion(): Sql
  supportsSkipLocked(version: string): boolean
  /** whether this server version can run the claim as designed, in words a user can act on */
  claimSupport(version: string): {ok: boolean; detail: string}
  /** run inside a transaction: a lock wait gives up after ms instead of blocking (undefined: SQLite's busy timeout does it) */
  lockTimeout(ms: number): Sql | undefined
  /** the current transaction's isolation level as column `level` (MySQL/MariaDB: the variable's name differs); undefined on SQLite */
  isolationLevel(version: string): Sql | undefined
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

/** Dialect.errors: Driver errors the code must tell apart, by their meaning rather than their codes. */
export interface ErrorsPart {
  /** the error a lock wait that gave up raises (PostgreSQL 55P03, MySQL/MariaDB 1205, SQLITE_BUSY) */
  isLockTimeout(error: unknown): boolean
  /** the database chose this transaction as a deadlock victim (it rolled back; safe to rerun) */
  isDeadlock(error: unknown): boolean
  /** a unique-key violation (PostgreSQL 23505, MySQL ER_DUP_ENTRY 1062, SQLite's primary-key constraint) */
  isDuplicateKey(error: unknown): boolean
}

/** Dialect.namedLock: `take` returns one row, whose `got` is 0 when the lock was not had within waitSeconds; `release` where it outlives the transaction. */
export interface NamedLock {
  take(key: string, waitSeconds: number): Sql
  release?(key: string): Sql
}
