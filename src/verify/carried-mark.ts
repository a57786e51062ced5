// The claim carrying the previous batch's mark (one commit per batch): the carried events come
// out published, and that same claim takes the next events, not them, even with their lease
// lapsed (its snapshot on PostgreSQL still reads them as pending).
import {carriedMark} from '../relay/claim.js'
import type {Check} from './check.js'
import {fail, pass} from './check.js'
import {sleep} from './context.js'

const OWNER = 'outbox-verify-carry'

export const carriedMarkCheck: Check = {
  id: 'carried-mark',
  title: "claim carries the last batch's mark",
  async run(ctx) {
    await ctx.reset()
    const seeded = await ctx.seed(5)
    const session = await ctx.session()
    const first = await ctx.claim(session, {batch: 2, leaseMs: 1, owner: OWNER})
    if (first.length !== 2) return fail(`the first claim took ${first.length} of 2 events`)
    await sleep(50, ctx.options.signal) // the lease lapses: only the carried mark keeps these out
    const next = await ctx.claim(session, {batch: 2, leaseMs: 60_000, owner: OWNER, mark: carriedMark(first)})
    const again = next.filter((e) => first.some((f) => f.id === e.id))
    if (again.length > 0) return fail(`the claim carrying the mark of ${first.length} events claimed ${again.length} of them again`)
    const published = await ctx.count('published_at IS NOT NULL AND lease_owner IS NULL AND lease_until IS NULL')
    if (published !== 2) return fail(`the claim carrying the mark of 2 events left ${published} of them published`)
    const want = seeded.slice(2, 4)
    if (next.map((e) => e.id).join() !== want.join()) return fail(`the claim carrying a mark took ${next.length} events, not the next 2 in (created_at, id) order`)
    const last = await ctx.claim(session, {batch: 2, leaseMs: 60_000, owner: OWNER, mark: carriedMark(next)})
    const empty = await ctx.claim(session, {batch: 2, leaseMs: 60_000, owner: OWNER, mark: carriedMark(last)})
    const pending = await ctx.count('published_at IS NULL')
    if (last.length !== 1 || empty.length !== 0 || pending !== 0) return fail(`after the last claims (${last.length}, then ${empty.length} events) ${pending} of 5 events are still unpublished: an empty claim must commit its mark`)
    return pass('each claim marked the batch before it published in the same commit and took the next events, not those (their lease lapsed); the empty last claim committed its mark')
  },
}
