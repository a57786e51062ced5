// The claim a relay loop sends ahead: after a full batch, when publishing takes a real share of
// a claim's time, the next claim goes out while that batch is published, so the database works
// while the broker does. Its events are leased like
// any claim's; a loop that stops, fails or backs off before publishing them hands them back
// (a crash leaves leases that lapse: the events are sent again, never lost).
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {releaseLeases, type ClaimedEvent} from './claim.js'
import type {BatchSize} from './batch-size.js'
import type {RelayLogger} from './options.js'
import {errorText} from './settle.js'

/**
 * A claim's events, when it was sent (performance.now(): their lease runs from then), its round
 * trip in ms, and how many it asked for.
 */
export interface Claimed {
  events: ClaimedEvent[]
  at: number
  ms: number
  asked: number
}

/** A loop's state between cycles: its claim in flight ahead of its current batch, if any, and its batch size. */
export interface Ahead {
  /** how many the loop's next claim asks for */
  size: BatchSize
  next?: Promise<Claimed>
  /** the claim the loop's last cycle took had been sent ahead */
  wasAhead?: boolean
  /** how long the loop's last batch took to publish (ms); none yet: no claim is sent ahead */
  publishMs?: number
  /** performance.now() when the loop started or last woke from idle (ClaimMark.before: whether a claim waits for the mark's move) */
  awakeSince: number
}

/** Waits for the claim sent ahead, if any, and gives its leases back (attempt refunded). */
export async function handBack(db: Db, names: TableNames, owner: string, ahead: Ahead, logger: RelayLogger): Promise<void> {
  const next = ahead.next
  ahead.next = undefined
  if (!next) return
  try {
    const {events} = await next
    if (events.length === 0) return
    const released = await releaseLeases(db, names, events.map((e) => e.id), owner)
    logger.info('claim sent ahead handed back', {claimed: events.length, released})
  } catch (error) {
    // the claim failed (nothing leased), or the release did: those leases lapse
    logger.warn('could not hand back the claim sent ahead; its leases lapse', {error: errorText(error)})
  }
}
