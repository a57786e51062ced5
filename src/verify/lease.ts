// A live lease is left alone; once it lapses by the database clock, another claimer takes it.
import type {Check} from './check.js'
import {fail, pass} from './check.js'
import {sleep} from './context.js'

const SHORT_LEASE_MS = 1500
const GIVE_UP_MS = 15_000

export const leaseCheck: Check = {
  id: 'lease',
  title: 'lapsed lease is taken over',
  async run(ctx) {
    await ctx.reset()
    const seeded = await ctx.seed(2)
    const slow = await ctx.session()
    const fast = await ctx.session()
    const claimedAt = performance.now()
    const first = await ctx.claim(slow, {batch: 10, leaseMs: SHORT_LEASE_MS, owner: 'outbox-verify-slow'})
    if (first.length !== 2) return fail(`the first claim took ${first.length} of 2 events`)
    const early = await ctx.claim(fast, {batch: 10, leaseMs: 60_000, owner: 'outbox-verify-fast'})
    const earlyMs = performance.now() - claimedAt
    if (early.length > 0 && earlyMs < SHORT_LEASE_MS) return fail(`a live lease was taken over ${Math.round(earlyMs)} ms into a ${SHORT_LEASE_MS} ms lease`)
    await sleep(SHORT_LEASE_MS + 100, ctx.options.signal)
    let taken = early
    while (taken.length === 0 && performance.now() - claimedAt < GIVE_UP_MS) {
      taken = await ctx.claim(fast, {batch: 10, leaseMs: 60_000, owner: 'outbox-verify-fast'})
      if (taken.length === 0) await sleep(250, ctx.options.signal)
    }
    ctx.throwIfAborted()
    if (taken.length !== 2 || !taken.every((e) => seeded.includes(e.id))) {
      return fail(`after the ${SHORT_LEASE_MS} ms lease lapsed, another claimer got ${taken.length} of the 2 events (within ${GIVE_UP_MS / 1000} s)`)
    }
    if (!taken.every((e) => e.attempts === 2)) return fail(`the taken-over events report attempts ${taken.map((e) => e.attempts).join(', ')}, not 2`)
    return pass(`a live ${SHORT_LEASE_MS} ms lease was left alone; once it lapsed by the database clock another connection took both events over (attempts 2)`)
  },
}
