// N claimers, each on its own connection, race over M events with live leases: every event
// must be claimed exactly once, by one claimer, and no lease may be taken while it is live.
import type {Check} from './check.js'
import {fail, ms, pass} from './check.js'

const LIVE_LEASE_MS = 10 * 60_000

export const claimersCheck: Check = {
  id: 'claimers',
  title: 'concurrent claimers, no double claim',
  async run(ctx) {
    const claimers = ctx.options.claimers ?? 4
    const events = ctx.options.events ?? 1000
    const batch = ctx.options.batch ?? 25
    await ctx.reset()
    const seeded = new Set(await ctx.seed(events))
    const sessions = await Promise.all(Array.from({length: claimers}, () => ctx.session()))
    const claimedBy = new Map<string, number[]>()
    const perClaimer = sessions.map(() => 0)
    // A broken claim that hands out the same rows again must not loop forever.
    const maxClaims = Math.ceil(events / batch) * 3 + claimers * 3
    let claims = 0
    const start = performance.now()
    const report = () => ctx.onNote?.(`${claimedBy.size}/${events} claimed`)
    await Promise.all(
      sessions.map(async (session, i) => {
        while (claims < maxClaims) {
          claims++
          const got = await ctx.claim(session, {batch, leaseMs: LIVE_LEASE_MS, owner: `outbox-verify-${i}`})
          if (got.length === 0) return
          for (const e of got) claimedBy.set(e.id, [...(claimedBy.get(e.id) ?? []), i])
          perClaimer[i] += got.length
          report()
        }
      }),
    )
    const elapsed = ms(start)
    const doubles = [...claimedBy].filter(([, by]) => by.length > 1)
    const missing = [...seeded].filter((id) => !claimedBy.has(id))
    const now = ctx.dialect.render.now
    const live = await ctx.count(`lease_until > ${now}`)
    const attemptsOver1 = await ctx.count('attempts <> 1')
    const spread = perClaimer.join('/')
    if (doubles.length > 0) {
      const [id, by] = doubles[0]
      return fail(`${doubles.length} event(s) claimed twice while their leases were live (e.g. ${id} by claimers ${by.join(' and ')}); per claimer ${spread}`)
    }
    if (missing.length > 0) return fail(`${missing.length} of ${events} events were never claimed (claimers stopped after ${claims} claims); per claimer ${spread}`)
    if (attemptsOver1 > 0) return fail(`${attemptsOver1} event(s) have attempts <> 1 in the table: a claim leased them twice`)
    if (live !== events) return fail(`only ${live} of ${events} leases are live after the race (lease ${LIVE_LEASE_MS / 60_000} min)`)
    return pass(
      `${claimers} connections claimed ${events} events in batches of ${batch} in ${elapsed} (per claimer ${spread}): each exactly once, 0 double claims, all ${live} leases live` +
        (ctx.dialect.verify.concurrency === 'single-writer' ? `; ${ctx.dialect.displayName} serialises writers, so the connections took turns` : ''),
    )
  },
}
