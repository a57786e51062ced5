// A loop's published-but-unmarked events: their mark rides on the loop's next claim (one commit
// per batch, dialects/relay.ts ClaimOptions.mark). The next claim comes at once while there is
// work; before the loop sleeps or stops, flush() marks them alone, so status and a restart never
// see long-published events as pending. Lost with the process: their leases lapse, and the
// events are sent again (at-least-once, never a loss).
import type {CarriedMark, TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {failpoint} from '../core/failpoints.js'
import {carriedMark, markPublished, type ClaimedEvent} from './claim.js'

export class PendingMark {
  private events: Pick<ClaimedEvent, 'id' | 'createdAt'>[] = []

  get size(): number {
    return this.events.length
  }

  add(events: Pick<ClaimedEvent, 'id' | 'createdAt'>[]): void {
    for (let i = 0; i < events.length; i++) this.events.push(events[i])
  }

  /** The mark for the next claim to carry (undefined: none pending); put it back with restore() if that claim fails. */
  take(): {carried?: CarriedMark; restore: () => void} {
    const taken = this.events
    this.events = []
    return {carried: taken.length > 0 ? carriedMark(taken) : undefined, restore: () => this.events.unshift(...taken)}
  }

  /** Marks what is pending in a statement of its own (the relay idles, backs off or stops). */
  async flush(db: Db, names: TableNames): Promise<void> {
    const taken = this.events
    if (taken.length === 0) return
    this.events = []
    try {
      await markPublished(db, names, taken)
    } catch (error) {
      this.events.unshift(...taken)
      throw error
    }
    failpoint('relay.after-mark')
  }
}
