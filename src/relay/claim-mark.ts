// The relay's low-water mark, in memory: the claim reads only events created at or after it
// (ClaimOptions.from), so a held xid's dead entries before it are never walked again. The SQL
// and why the mark is safe are the dialect's (ClaimMarkPart in dialects/relay.ts).
import type {ClaimMarkPart, Dialect, TableNames} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'
import type {Db} from '../db/index.js'

/**
 * While claims run the mark moves as often as this, whatever the poll interval: during a
 * drain the events published since it moved stay in the index (entries of published rows until
 * vacuum) and every claim walks them. Moving it once per poll interval (1 s) made a 10,000-event
 * drainOnce 0.84x of one from the start of the index; every 20 ms, 0.98x; every 50 ms, 0.97x
 * (A/B on one PostgreSQL table, 10 alternating pairs, quiet machine). Two short statements a move.
 */
export const MARK_REFRESH_MAX_MS = 50

/**
 * A margin-bounded mark (ClaimMarkPart.bound 'margin', MySQL/MariaDB) trails the database clock by
 * this much: an event whose INSERT is still uncommitted this long after it ran may fall below the
 * mark and is then claimed by the walk every markResetMs (late, not lost). 2 s: the business
 * transaction that writes an event usually commits milliseconds after it (the pressure bench's
 * take 10-40 ms), and 2 s still covers a commit's fsync under load, a GC pause or a pool wait
 * between the two. What it costs:
 * under a held read view a claim walks the delete-marked entries of what was published within the
 * margin, ~2 InnoDB pages each (a locking read looks each up): at 1,000 events/s, 6,091 pages for
 * a mark moved every 2 s with this margin (bench/results/pressure-mariadb-margin.md), flat in
 * time, where the walk from the start grows by ~2 pages per event published since the view began.
 */
export const DEFAULT_MARK_MARGIN_MS = 2000

export interface ClaimMarkOptions {
  /** the mark moves at most this often (the relay's poll interval, capped at MARK_REFRESH_MAX_MS) */
  refreshMs: number
  /** back to `none`, one walk of the whole index, this often (see Relay's markResetMs) */
  resetMs: number
  /** bound 'margin' only: how far the mark trails the database clock (DEFAULT_MARK_MARGIN_MS) */
  marginMs?: number
}

export class ClaimMark {
  private value: string
  private refreshedAt = -Infinity
  private resetAt = -Infinity
  private refreshing?: Promise<void>
  /** the periodic walk from `none`, in the background: claims go on from the mark meanwhile */
  private rewalking?: Promise<void>
  /** bumped by reset(): a refresh or walk that began before it must not overwrite it */
  private generation = 0

  constructor(
    private readonly part: ClaimMarkPart,
    private readonly options: ClaimMarkOptions,
  ) {
    this.value = part.none
  }

  /** the mark the last claim used (`none` until the first refresh) */
  get current(): string {
    return this.value
  }

  /** how far the mark trails the database clock where the dialect bounds it by a margin (bound 'margin') */
  get marginMs(): number | undefined {
    return this.part.bound === 'margin' ? (this.options.marginMs ?? DEFAULT_MARK_MARGIN_MS) : undefined
  }

  /** The next claim starts from scratch (a relay's start, a drain of what is deliverable now). */
  reset(): void {
    this.generation++
    this.value = this.part.none
    this.resetAt = -Infinity
    this.refreshedAt = -Infinity
  }

  /**
   * The mark for the next claim: moved first when the poll interval has passed. Every resetMs the
   * mark is computed again from `none`: rows that became pending again below it (`outbox
   * replay`, of failed events too; a created_at set by hand) are found by that walk, so they wait
   * about resetMs at most. The walk runs beside the claims, which go on from the mark they have:
   * under a held horizon it reads every entry published since (36,206 buffers after 10 minutes
   * in the pressure run), which a claim from `none` did on the claims' path, and the move after
   * it again. A mark kept longer stays safe, only less tight. Concurrent loops share one refresh;
   * a failed one leaves the old mark, which stays safe for every writer.
   *
   * `awakeSince`: when the claiming loop last woke from idle. A loop awake for less than the
   * refresh interval does not wait for a move that is due (its claim takes the mark there is):
   * the relay moves the mark when a loop goes idle, before it sleeps, off the path from a NOTIFY
   * to the claim. With LISTEN at 200 events/s the loop sleeps between events, and the move's two
   * round trips on every tenth claim's path doubled the p99, commit to publish (BENCHMARKS.md,
   * "Latency and producer cost against the build before issue 23"). A loop that claims without going
   * idle (a backlog, a steady stream) moves it on its claims' path, as often as before.
   */
  async before(db: Db, names: TableNames, awakeSince = -Infinity): Promise<string> {
    // a reset must not be overwritten by a refresh that started from the mark before it
    while (this.refreshing) await this.refreshing
    const now = performance.now()
    if (now - this.resetAt >= this.options.resetMs) {
      this.resetAt = now
      if (this.value === this.part.none) {
        // a relay's start or a reset(): the walk from `none` runs first, so no claim goes from
        // `none`. On a partitioned outbox such a claim plans every partition (14-26 ms on 39,
        // against ~1.3 ms from a mark), the walk's one read plans them once. A failed walk
        // leaves `none`: the claims go from the start, as safe. Beside the claims otherwise: the
        // old mark stays until it ends, the rows it misses wait for the next walk
        this.refreshedAt = now
        this.refreshing = this.walkFromStart(db, names).finally(() => (this.refreshing = undefined))
      } else if (!this.rewalking) {
        this.rewalking = this.walkFromStart(db, names).finally(() => (this.rewalking = undefined))
      }
    }
    // no refresh from the mark while the walk runs: the walk's mark replaces it when it ends
    const interval = Math.min(this.options.refreshMs, MARK_REFRESH_MAX_MS)
    if (!this.rewalking && now - this.refreshedAt >= interval && now - awakeSince >= interval) {
      this.refreshedAt = now
      this.refreshing = this.refresh(db, names, this.value).finally(() => (this.refreshing = undefined))
    }
    await this.refreshing
    return this.value
  }

  /** The walk beside the claims, if one runs (for tests to wait on). */
  get walk(): Promise<void> | undefined {
    return this.rewalking
  }

  /** The mark computed from `none`; a failed walk leaves the mark as it was (safe: only less tight). */
  private walkFromStart(db: Db, names: TableNames): Promise<void> {
    return this.refresh(db, names, this.part.none).catch(() => {})
  }

  private async refresh(db: Db, names: TableNames, from: string): Promise<void> {
    const generation = this.generation
    // two statements, in this order: the bound is read before next()'s snapshot is taken
    const [{bound}] = await db.query<{bound: string}>(this.part.writersBound(names, this.marginMs ?? 0))
    const [{mark}] = await db.query<{mark: string}>(this.part.next(names, from, bound))
    if (generation === this.generation) this.value = mark
  }
}

/**
 * The mark a claim starts from for `claimFrom` (default: 'mark' where the dialect's mark never
 * passes an uncommitted event, ClaimMarkPart.bound 'writers'; 'start' where it is bounded by a
 * margin, or there is none): the dialect's `none` to begin with, undefined for 'start'.
 * `outbox sql claim` prints it.
 */
export function initialMark(dialect: Dialect, claimFrom: 'mark' | 'start' | undefined): string | undefined {
  const part = dialect.relay.claimMark
  if ((claimFrom ?? (part?.bound === 'writers' ? 'mark' : 'start')) === 'start') return undefined
  if (!part) throw new UsageError((o) => `${o('claimFrom')} 'mark' is not available on ${dialect.displayName}`, (o) => `Use ${o('claimFrom')} 'start'`)
  return part.none
}

/** The relay's mark for `claimFrom`; undefined for 'start'. A margin only where it bounds the mark. */
export function claimMarkFor(dialect: Dialect, claimFrom: 'mark' | 'start' | undefined, options: ClaimMarkOptions): ClaimMark | undefined {
  const from = initialMark(dialect, claimFrom)
  if (options.marginMs !== undefined) {
    const part = dialect.relay.claimMark
    if (part?.bound !== 'margin') {
      const why = part ? "its claim mark is bounded by the outbox's writers" : 'it has no claim mark'
      throw new UsageError((o) => `${o('markMarginMs')} means nothing on ${dialect.displayName}: ${why}`, (o) => `Drop ${o('markMarginMs')}`)
    }
    if (from === undefined) throw new UsageError((o) => `${o('markMarginMs')} bounds the claim mark, and the claims start from the start of the index`, (o) => `Add ${o('claimFrom')} mark, or drop ${o('markMarginMs')}`)
    if (!Number.isSafeInteger(options.marginMs) || options.marginMs < 0) throw new UsageError((o) => `relay ${o('markMarginMs')} must be a whole number >= 0 (got ${options.marginMs})`)
  }
  if (from === undefined) return undefined
  if (!Number.isSafeInteger(options.resetMs) || options.resetMs < 1) throw new UsageError((o) => `relay ${o('markResetMs')} must be a whole number >= 1 (got ${options.resetMs})`)
  return new ClaimMark(dialect.relay.claimMark!, options)
}
