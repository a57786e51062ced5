// While one session holds its claim transaction open, a second one claiming must get other
// rows at once (PostgreSQL, MySQL: SKIP LOCKED), or wait for the single writer (SQLite).
import type {ClaimedEvent} from '../schema/event-row.js'
import type {Check} from './check.js'
import {fail, ms, pass} from './check.js'
import type {VerifyContext} from './context.js'
import type {Outcome} from './types.js'

/** A second session that waits this long for a lock has not skipped it. */
export const LOCK_WAIT_MS = 1000
const SQLITE_BUSY_MS = 100

const opts = (owner: string) => ({batch: 2, leaseMs: 60_000, owner})
const ids = (events: ClaimedEvent[]) => events.map((e) => e.id)
// As sets: the relay sorts a batch on the client; the order inside one batch is not the point here.
const same = (a: string[], b: string[]) => a.length === b.length && [...a].sort().join() === [...b].sort().join()

export const secondSessionCheck: Check = {
  id: 'second-session',
  title: 'second session gets other rows',
  async run(ctx) {
    await ctx.reset()
    const seeded = await ctx.seed(4)
    const first = await ctx.hold(await ctx.session(), opts('outbox-verify-a'))
    try {
      if (!same(ids(first.events), seeded.slice(0, 2))) return fail(`the first claim did not take the 2 oldest events (got ${first.events.length})`)
      return ctx.dialect.verify.concurrency === 'single-writer' ? await singleWriter(ctx, first, seeded) : await skipsLocked(ctx, first, seeded)
    } finally {
      await first.release()
    }
  },
}

async function skipsLocked(ctx: VerifyContext, first: {events: ClaimedEvent[]}, seeded: string[]): Promise<Outcome> {
  const second = await ctx.session()
  const start = performance.now()
  let got: ClaimedEvent[]
  try {
    got = await ctx.claim(second, opts('outbox-verify-b'), LOCK_WAIT_MS)
  } catch (error) {
    if (ctx.dialect.errors.isLockTimeout(error)) {
      return fail(`the second session waited on the first session's locked rows (gave up after ${LOCK_WAIT_MS} ms): the claim does not skip locked rows`)
    }
    throw error
  }
  const taken = new Set(ids(first.events))
  const overlap = ids(got).filter((id) => taken.has(id))
  if (overlap.length) return fail(`the second session claimed ${overlap.length} row(s) the first still holds: double claim`)
  if (got.length === 0) return fail('the second session got nothing while 2 rows were free: the claim locked more rows than it took (is the claim index missing?)')
  if (!same(ids(got), seeded.slice(2, 4))) return fail(`the second session got ${got.length} row(s), not the next 2 oldest`)
  return pass(`while the first claim transaction held 2 rows, a second connection claimed the next 2 in ${ms(start)} without waiting (lock timeout ${LOCK_WAIT_MS} ms): SKIP LOCKED`)
}

async function singleWriter(ctx: VerifyContext, first: {release(): Promise<void>}, seeded: string[]): Promise<Outcome> {
  // better-sqlite3 is synchronous: a short busy timeout shows the wait without stalling verify.
  const second = await ctx.session(SQLITE_BUSY_MS)
  try {
    const early = await ctx.claim(second, opts('outbox-verify-b'))
    return fail(`a second writer claimed ${early.length} row(s) while the first held BEGIN IMMEDIATE: SQLite's write lock is not in effect`)
  } catch (error) {
    if (!ctx.dialect.errors.isLockTimeout(error)) throw error
  }
  await first.release()
  const after = await ctx.claim(second, opts('outbox-verify-b'))
  if (!same(ids(after), seeded.slice(2, 4))) return fail(`after the first commit, the second writer got ${after.length} row(s), not the other 2`)
  return pass(
    `the second writer waited for the single writer (SQLITE_BUSY after its ${SQLITE_BUSY_MS} ms busy timeout while the first held BEGIN IMMEDIATE), then claimed the other 2 rows after the commit`,
  )
}
