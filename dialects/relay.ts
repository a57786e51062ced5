// RelayPart: the relay's statements. Claim a batch under a lease, mark it published, retry or
// fail one event, give leases back. src/relay/claim.ts runs them, `outbox sql` prints them.
import type {TableNames} from './dialect.js'
import type {Sql} from './sql.js'

export interface ClaimOptions {
  batch: number
  leaseMs: number
  owner: string
  /** never claim an event while an older event of the same aggregate is unpublished */
  ordering?: 'none' | 'aggregate'
  /**
   * The low-water mark (ClaimMarkPart): the claim reads only events created at or after it, so
   * its index scan starts there, past the dead entries of what was published before. Undefined:
   * from the start of the index (today's claim, and every dialect without a claimMark).
   */
  from?: string
  /**
   * The previous batch's successes, marked published by this claim in its own commit: one commit
   * per batch instead of two. Rolled back with the claim; a crash before it commits leaves
   * leases that lapse, and the events are sent again (never lost).
   */
  mark?: CarriedMark
}

/** What a claim carries: the ids markPublished would take, and their created_at span. */
export interface CarriedMark {
  ids: string[]
  createdAt?: CreatedSpan
}

/**
 * The relay's low-water mark, kept in memory (src/relay/claim-mark.ts). No committed event can
 * be pending below it: next() saw them. Uncommitted ones bound it through writersBound, as
 * `bound` says; later writers date their events after it. Two statements, run in this order in
 * autocommit: the bound is read BEFORE next()'s snapshot, so a writer that commits in between is
 * either still bounding the first or visible to the second.
 */
export interface ClaimMarkPart {
  /** the mark that bounds nothing: a full claim, and where next() walks the whole index from */
  readonly none: string
  /**
   * What writersBound guarantees, and so whether the mark is the relay's default:
   * - 'writers' (PostgreSQL): the start of every open transaction that wrote the outbox; the
   *   mark never passes an uncommitted event. claimFrom 'mark' is the default.
   * - 'margin' (MySQL/MariaDB: no live list of the outbox's writers, bench/results/
   *   pressure-mariadb-view.md): the database clock less the relay's markMarginMs. An event
   *   whose INSERT stayed uncommitted longer than the margin can fall below the mark; the walk
   *   from `none` every markResetMs claims it, late by up to that, never lost. Opt-in:
   *   claimFrom 'start' stays the default.
   */
  readonly bound: 'writers' | 'margin'
  /**
   * One row, column `bound` (text): with bound 'writers', the oldest start of a transaction
   * that may write the outbox now, or the database clock when none does, `none` when a holder's
   * start cannot be read (marginMs unused); with 'margin', the clock (the one the producer's
   * created_at reads) less marginMs.
   */
  writersBound(names: TableNames, marginMs: number): Sql
  /**
   * One row, column `mark` (text): the oldest pending event (leased and retrying ones count) at
   * or after `old`, or `bound` when that is older. Walks only what was published since `old`.
   */
  next(names: TableNames, old: string, bound: string): Sql
}

/**
 * The claim, as the relay runs it. Either way its rows carry the columns of
 * src/schema/columns.ts CLAIMED_COLUMNS, `attempts` counting this claim.
 */
/**
 * `mark` (ClaimOptions.mark, where the dialect runs it as a statement of its own): run first, in
 * the claim's transaction, so the claim does not see those rows as pending; PostgreSQL carries
 * the mark inside its one statement instead.
 */
export type ClaimPlan =
  /**
   * one statement that locks, leases and returns the rows (PostgreSQL, SQLite); `ordered`: in
   * claim order, (created_at, id) (PostgreSQL sorts them; SQLite's RETURNING has no order, and
   * its created_at is fixed-width text, so the relay sorts on that)
   */
  | {kind: 'update-returning'; statement: Sql; ordered: boolean; mark?: Sql}
  /**
   * MySQL/MariaDB: inside one READ COMMITTED transaction, SELECT ... FOR UPDATE SKIP LOCKED,
   * then UPDATE the selected ids, then COMMIT. `createdAt`: the locked rows' span, as for
   * markPublished (a partitioned outbox reads only the partitions holding them)
   */
  | {kind: 'lock-then-update'; session: Sql[]; lock: Sql; update: (ids: string[], createdAt?: CreatedSpan) => Sql; mark?: Sql}

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

/** a span of created_at that holds some rows, bounds included */
export interface CreatedSpan {
  from: Date
  to: Date
}

export interface RelayPart {
  claim(names: TableNames, options: ClaimOptions): ClaimPlan
  /** the claim as one script, values inlined, runnable as-is in the database's own client (the carried mark included) */
  claimScript(names: TableNames, options: ClaimOptions): string
  /**
   * publishes the batch's successes: one statement, whatever the number of ids. `createdAt`:
   * the span of their created_at (inclusive, a millisecond wide on each side), which lets a
   * partitioned outbox read only the partitions holding them instead of probing each
   * partition's key per id (SQLite has no partitions)
   */
  markPublished(names: TableNames, ids: string[], createdAt?: CreatedSpan): Sql
  /**
   * Whether markPublished's statement is kept as a server-side prepared statement. True where
   * its text is the same for every batch (the ids bound as one value); false where each id has
   * its own placeholder, so every batch size would leave another prepared statement on the
   * connection (MySQL's IN list).
   */
  readonly prepareMark: boolean
  retry(names: TableNames, input: RetryInput): Sql
  /** give back leases that were claimed but not sent (graceful stop) */
  release(names: TableNames, ids: string[], owner: string): Sql
  /**
   * A statement, sent in the producer's transaction, that wakes listening relays at its commit
   * (a hint; polling stays the truth). Undefined: relays only poll (PostgreSQL has NOTIFY).
   */
  notify?(channel: string): Sql
  /** the LISTEN statement matching notify(); defined exactly where notify is */
  listen?(channel: string): Sql
  /**
   * The claim's low-water mark (ClaimOptions.from). Undefined: this dialect always claims from
   * the start of its index (relay option claimFrom 'start').
   */
  readonly claimMark?: ClaimMarkPart
  /**
   * The lease held by the claim's own transaction (relay option leaseBy 'transaction'): the rows
   * are locked, not leased, while the batch is published, and the mark commits that
   * transaction (one new row version per event instead of two). Undefined where holding a
   * transaction open would block producers (SQLite's single writer) or is not built yet (MySQL):
   * those relays lease rows.
   */
  readonly transactionLease?: TransactionLeasePart
}

/**
 * The transaction lease's statements, run on one held connection (Db.hold) as two scripts of
 * several statements each, values inlined: `begin` ... `claim`, publish, then the mark, the
 * retries and COMMIT. A crashed relay's connection closes and its locks go with it; a stuck
 * one is ended by the server after the lease (`begin`'s session timeout), and its events are
 * claimed again by another relay: a resend, never a loss.
 */
export interface TransactionLeasePart {
  /** opens the transaction and bounds how long it may sit idle: the lease */
  begin(leaseMs: number): Sql[]
  /** locks the batch (skipping locked rows and live row leases), returns the claimed columns, `attempts` counting this claim */
  claim(names: TableNames, options: ClaimOptions): Sql
  /** the batch's successes, dated when the mark runs (not at the transaction's start) */
  mark(names: TableNames, ids: string[], createdAt?: CreatedSpan): Sql
  /**
   * a failed publish inside the held transaction: its attempt counted here (the claim wrote
   * nothing), failed at maxAttempts, or, refunded, not counted
   */
  retry(names: TableNames, input: RetryInput): Sql
  readonly commit: Sql
  readonly rollback: Sql
}
