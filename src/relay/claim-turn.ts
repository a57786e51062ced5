// One claim in flight per relay: its loops' claims take turns, their publishes still overlap.
// Claims sent side by side start at the same place in the claim index and race for the same
// rows: each walks the rows the others hold, tries their locks and skips them, and rechecks
// rows leased since its snapshot was taken. On PostgreSQL, 20,000 events drained by 4 loops
// (durable commits, bench/results/peers-c4.md), the server's CPU for the drain was 630-910 ms
// with the claims side by side, 400-490 ms taking turns (one loop: 310-470 ms), for the same
// or a shorter drain: the database does half the work for the same events.

export class ClaimTurn {
  private last: Promise<unknown> = Promise.resolve()

  /** Runs `claim` once every claim queued before it has settled, resolved or failed. */
  run<T>(claim: () => Promise<T>): Promise<T> {
    const mine = this.last.then(claim)
    this.last = mine.catch(() => {}) // a failed claim is its loop's to handle, not the next one's
    return mine
  }
}
