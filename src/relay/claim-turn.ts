// One claim in flight per relay: its loops' claims take turns, their publishes still overlap.
// Claims sent side by side start at the same place in the claim index and race for the same
// rows: each walks the rows the others hold, tries their locks and skips them, and rechecks
// rows leased since its snapshot was taken. On PostgreSQL, 20,000 events drained by 4 loops
// (durable commits, bench/results/relay-claim-turn.md), the server's CPU for the drain was
// 835 ms (700-980) with the claims side by side, 505 ms (370-640) taking turns (one loop:
// 415), the drain x1.12 (0.88-1.26): the same events for 40% less of the database's CPU.
// The transaction lease does not take turns: its claims cost no more side by side (470-600 ms).

export class ClaimTurn {
  private last: Promise<unknown> = Promise.resolve()

  /** Runs `claim` once every claim queued before it has settled, resolved or failed. */
  run<T>(claim: () => Promise<T>): Promise<T> {
    const mine = this.last.then(claim)
    this.last = mine.catch(() => {}) // a failed claim is its loop's to handle, not the next one's
    return mine
  }
}
