// The transaction lease (relay option leaseBy 'transaction', PostgreSQL): a batch is claimed,
// published and marked inside one transaction on one held connection. The claim locks its rows
// (dialect.relay.transactionLease) and writes nothing; the mark, the retries and COMMIT go in
// one script. What the lease guarantees is the row lock: a relay that crashes or loses its
// connection frees its rows at once; one stuck between statements is cut off by the server
// after leaseMs (idle_in_transaction_session_timeout), its mark then fails and another relay
// sends the batch again: a duplicate, never a loss. Not counted: a crash mid-publish (the
// claim wrote no attempt), so an event that crashes the relay itself is never failed by
// maxAttempts under this lease (README, the relay's lease).
import type {ClaimOptions, RetryInput, Sql, TableNames, TransactionLeasePart} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'
import {failpoint} from '../core/failpoints.js'
import type {Db, HeldConnection} from '../db/index.js'
import {toClaimedEvent, type ClaimedEvent} from '../schema/event-row.js'
import type {BatchSize} from './batch-size.js'
import type {ClaimMark} from './claim-mark.js'
import type {DrainResult, RelayLogger} from './options.js'
import {PendingMark} from './pending-mark.js'
import type {Sent, Settler} from './settle.js'

export interface TransactionCycle {
  db: Db
  names: TableNames
  claim: ClaimOptions
  settler: Settler
  logger: RelayLogger
  mark?: ClaimMark
  part: TransactionLeasePart
  stopping(): boolean
  /** the relay's publish of a claimed batch: what was sent (results), and what was not */
  sendHalves(events: ClaimedEvent[], at: number): Promise<{results: Sent[]; unsent: ClaimedEvent[]}>
  /** the relay's settle-count-log of a batch, around `settle` */
  settleBatch(events: ClaimedEvent[], results: Sent[], t: BatchTimes, settle: (sent: ClaimedEvent[]) => Promise<DrainResult>): Promise<DrainResult>
  /** the relay's claim histogram */
  observeClaim(seconds: number): void
}

/** When a batch's claim was sent (performance.now()), how long it took, and how many rows were handed back unsent. */
export interface BatchTimes {
  at: number
  claimMs: number
  released: number
}

/** The dialect's transaction lease and a Db that can hold a connection; a usage error where there is none. */
export function transactionLeaseOf(db: Db): TransactionLeasePart {
  const part = db.dialect.relay.transactionLease
  if (!part || !db.hold) {
    throw new UsageError(`relay leaseBy 'transaction' is PostgreSQL only (${db.dialect.displayName} relays lease rows)`, 'Use leaseBy row (the default)')
  }
  return part
}

/**
 * One batch of the loop's size under the transaction lease: claim -> publish -> mark + COMMIT.
 * Undefined when nothing was claimable. `awakeSince`: when the loop last woke (ClaimMark.before).
 */
export async function transactionCycle(c: TransactionCycle, size: BatchSize, awakeSince: number): Promise<DrainResult | undefined> {
  const {part} = c
  const claimSent = performance.now()
  const from = await c.mark?.before(c.db, c.names, awakeSince)
  const asked = size.next
  const options = {...c.claim, batch: asked, ...(from === undefined ? {} : {from})}
  const at = performance.now()
  const held = await c.db.hold!()
  let broken = true // released whole only after a COMMIT or ROLLBACK went through
  try {
    const opened = await held.script([...part.begin(c.claim.leaseMs), part.claim(c.names, options)])
    const claimMs = performance.now() - claimSent
    c.observeClaim(claimMs / 1000)
    const events = opened[opened.length - 1].rows.map((row) => toClaimedEvent(c.db.dialect, row))
    if (events.length === 0) {
      await held.script([part.commit])
      broken = false
      return undefined
    }
    failpoint('relay.after-claim')
    if (c.stopping()) {
      // nothing of this batch is in flight: the rollback frees it all
      await held.script([part.rollback])
      broken = false
      c.logger.info('batch released on stop', {claimed: events.length, released: events.length})
      return {published: 0, retried: 0, failed: 0, batches: 1}
    }
    const {results, unsent} = await c.sendHalves(events, at)
    // the unsent half is not marked: the commit frees it with the rest of the locks
    const outcome = await c.settleBatch(events, results, {at: claimSent, claimMs, released: unsent.length}, (sent) => commitBatch(c, part, held, sent, results))
    broken = false
    size.observe(asked, events, performance.now() - at)
    return outcome
  } finally {
    held.release(broken)
  }
}

/** Settles the batch into one script: the successes' mark, each failure's retry, COMMIT. */
async function commitBatch(c: TransactionCycle, part: TransactionLeasePart, held: HeldConnection, sent: ClaimedEvent[], results: Sent[]): Promise<DrainResult> {
  const ok = new PendingMark()
  const retries: Sql[] = []
  // the rows are locked by this transaction: a retry recorded in it cannot find them taken
  const queue = async (input: RetryInput) => (retries.push(part.retry(c.names, input)), true)
  const outcome = await c.settler.settle(sent, results, ok, queue)
  const {carried} = ok.take()
  await held.script([...(carried ? [part.mark(c.names, carried.ids, carried.createdAt)] : []), ...retries, part.commit])
  if (carried) failpoint('relay.after-mark')
  return outcome
}
