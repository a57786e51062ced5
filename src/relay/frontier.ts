// Where a claim that follows a full one starts: just before the newest event this relay has
// claimed, not at the low-water mark. During a backlog every claim from the mark walks the rows
// its loops still hold (leased, or published and marked by the very claim that walks them) and
// the dead index entries they left since the mark last moved; from the frontier it reads only
// rows it can take. What a claim from the frontier cannot see (an event below it made pending
// again: a retry's backoff over, a lease handed back or lapsed, a producer that committed late)
// is found by the next claim from the mark: the first after a claim came back short (the end of
// the backlog: a drain ends only on an empty claim from the mark), and at least every `markMs`.
// A skipped event is late, never lost; --ordering aggregate holds whatever the scan's start (an
// event is claimable only once every older event of its aggregate is published).

export class ClaimFrontier {
  /** the newest created_at claimed, less a millisecond (Dates hold ms, the column µs) */
  private at?: Date
  private markClaimAt = -Infinity

  constructor(private readonly markMs: number) {}

  /** Forget it: the next claims start from the mark (a drain or a run begins, a loop hands leases back). */
  reset(): void {
    this.at = undefined
    this.markClaimAt = -Infinity
  }

  /**
   * The start of the next claim: the frontier (ISO text) after a full claim of this loop, unless
   * a claim from the mark is due; undefined: from the mark.
   */
  start(afterFull: boolean): string | undefined {
    const now = performance.now()
    if (!afterFull || this.at === undefined || now - this.markClaimAt >= this.markMs) {
      this.markClaimAt = now
      return undefined
    }
    return this.at.toISOString()
  }

  /** Moves it past a claim's events (forward only: loops' claims return out of order). */
  advance(events: readonly {createdAt: Date}[]): void {
    if (events.length === 0) return
    const last = events[events.length - 1].createdAt.getTime() - 1
    if (this.at === undefined || last > this.at.getTime()) this.at = new Date(last)
  }
}
