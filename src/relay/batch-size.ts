// How many events a loop's next claim asks for. It starts at `batch` and doubles while claims
// come back full (a backlog: fewer statements, commits and round trips per event), up to
// `maxBatch`; a claim that comes back short (the backlog is gone) sends it back to `batch`. It
// never grows past what the lease covers: a doubled batch must still be settled well within the
// lease, going by how long this one took, and hold a bounded number of payload bytes.
// Debezium takes up to max.batch.size (2048) of whatever is queued per poll; graphile-worker's
// local queue fetches up to its size (500 on its performance page) while jobs are there.

/** Grow only while a batch twice this one's size would take under this share of the lease. */
const GROW_LEASE_SHARE = 0.25
/** A batch that took more than this share of the lease halves the next one. */
const SHRINK_LEASE_SHARE = 0.5
/** Grow only while a batch twice this one's size would hold under this many payload characters. */
const GROW_MAX_CHARS = 16 * 1024 * 1024

/** The default maxBatch: ten times `batch`, capped at this (a claim of 1000 measured in BENCHMARKS.md, peers). */
export const DEFAULT_MAX_BATCH = 1000

export class BatchSize {
  private size: number

  constructor(
    private readonly min: number,
    private readonly max: number,
    private readonly leaseMs: number,
  ) {
    this.size = min
  }

  /** what the next claim asks for */
  get next(): number {
    return this.size
  }

  /**
   * After a claim that asked for `asked` got `events` and they were settled `ms` after the claim
   * was sent (the time the lease had to cover).
   */
  observe(asked: number, events: readonly {payload: string}[], ms: number): void {
    if (ms > this.leaseMs * SHRINK_LEASE_SHARE) {
      this.size = Math.max(this.min, Math.floor(this.size / 2))
      return
    }
    if (events.length < asked) {
      this.size = this.min
      return
    }
    if (asked < this.size || this.size >= this.max) return // a claim sent before the last change; or at the cap
    if (ms * 2 > this.leaseMs * GROW_LEASE_SHARE) return
    let chars = 0
    for (const e of events) chars += e.payload.length
    if (chars * 2 > GROW_MAX_CHARS) return
    this.size = Math.min(this.max, this.size * 2)
  }
}

/** maxBatch as given, or the default for `batch`; never below it. */
export function maxBatchFor(batch: number, maxBatch: number | undefined): number {
  return Math.max(batch, maxBatch ?? Math.min(batch * 10, Math.max(batch, DEFAULT_MAX_BATCH)))
}
