// The relay's options and results, and what the loop does with them: checked whole numbers,
// a drain's running totals.
import {UsageError} from '../core/errors.js'
import type {Db} from '../db/index.js'
import type {Publisher} from '../publishers/types.js'
import type {TableNames} from '../../dialects/index.js'
import type {Backoff} from './backoff.js'

export interface RelayLogger {
  info(msg: string, fields?: object): void
  warn(msg: string, fields?: object): void
  error(msg: string, fields?: object): void
}

export interface RelayOptions {
  db: Db
  publisher: Publisher
  tables?: Partial<TableNames>
  /** events per claim to begin with, and the least a claim asks for (default 100) */
  batch?: number
  /**
   * the most a claim asks for: while claims come back full (a backlog) each asks for twice the
   * last, up to this, as long as a batch that size is settled well within the lease; a claim that
   * comes back short goes back to `batch` (default 10 x batch, at most 1000, never below batch)
   */
  maxBatch?: number
  /** lease length (default 30s); a batch must be settled within it or another relay may take over */
  leaseMs?: number
  /** idle poll interval (default 1s) */
  pollMs?: number
  /** the event is failed when its attempts reach this (default 10) */
  maxAttempts?: number
  /** retry delay: exponential from baseMs, capped at capMs, with jitter (default 1s..10m) */
  backoff?: Backoff
  /** batches in flight in this process (default 1); their row-lease claims take turns (Relay.turn) */
  concurrency?: number
  ordering?: 'none' | 'aggregate'
  /** lease owner (default host:pid:random) */
  owner?: string
  logger?: RelayLogger
  /** PostgreSQL: wake on the producer's NOTIFY as well as polling */
  listen?: boolean
  /** longest error text written to last_error (default 2000 characters) */
  maxErrorLength?: number
  /**
   * 'mark': each claim starts at a low-water mark the relay keeps in memory, so a held xid's (a
   * held read view's) dead index entries before it are not walked again; the default on
   * PostgreSQL, whose mark never passes an uncommitted event; opt-in on MySQL/MariaDB (see
   * markMarginMs). 'start': from the start of the pending index (the default elsewhere).
   */
  claimFrom?: 'mark' | 'start'
  /**
   * MySQL/MariaDB's mark (ClaimMarkPart.bound 'margin'): how far it trails the database clock
   * (default 2000, DEFAULT_MARK_MARGIN_MS). An event whose INSERT stays uncommitted longer than
   * this may fall below the mark and is published by the walk every markResetMs: that late, never
   * lost. Refused where the claims do not start from such a mark.
   */
  markMarginMs?: number
  /**
   * 'mark': walk the whole index again this often, for rows made pending again (default leaseMs:
   * how long a crashed relay's events wait before another relay takes them over already)
   */
  markResetMs?: number
  /**
   * 'row' (default): a claim writes a lease (owner, until) on its rows and the mark clears it;
   * two new row versions per event, the lease survives the relay's connection. 'transaction'
   * (PostgreSQL): the claim's transaction holds row locks while the batch is published and the
   * mark commits it: one row version per event; the lease ends with the connection, or after
   * leaseMs idle (the server's idle_in_transaction_session_timeout). A crash mid-publish does
   * not count an attempt under it.
   */
  leaseBy?: 'row' | 'transaction'
}

export interface DrainResult {
  published: number
  retried: number
  failed: number
  batches: number
  /** the broker took none of the last batch that failed (it looks down): its attempts were given back */
  outage?: boolean
  /** why the last batch with a failure had it: its first error (each event's own is in last_error) */
  error?: string
}

export const SILENT: RelayLogger = {info() {}, warn() {}, error() {}}

export function checkInt(value: number, name: string, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new UsageError(`relay ${name} must be a whole number >= ${min} (got ${value})`, `Pass a valid ${name}`)
  return value
}

export function emptyResult(): DrainResult {
  return {published: 0, retried: 0, failed: 0, batches: 0}
}

export function addResult(total: DrainResult, part: DrainResult): void {
  total.published += part.published
  total.retried += part.retried
  total.failed += part.failed
  total.batches += part.batches
  // what --once reports as the reason events are left: the latest failure, and whether it was an outage
  if (part.error !== undefined) {
    total.error = part.error
    total.outage = part.outage
  }
}
