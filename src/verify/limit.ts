// The claim leases at most --batch rows. PostgreSQL: with statistics taken when the table had
// one row, a LIMIT inside IN (...) under UPDATE can be re-run per row (BUG #15715).
import type {Check} from './check.js'
import {fail, pass} from './check.js'

const MANY = 500

export const limitCheck: Check = {
  id: 'limit',
  title: 'LIMIT respected',
  async run(ctx) {
    await ctx.reset()
    await ctx.seed(1)
    await ctx.db.execute(ctx.dialect.verify.analyze(ctx.names))
    await ctx.seed(MANY)
    const session = await ctx.session()
    const got = await ctx.claim(session, {batch: 2, leaseMs: 60_000, owner: 'outbox-verify-limit'})
    const leased = await ctx.count('lease_owner IS NOT NULL')
    const how = `statistics taken with 1 row, then ${MANY} more inserted`
    if (got.length !== 2 || leased !== 2) return fail(`a claim of 2 returned ${got.length} and leased ${leased} rows (${how})`)
    return pass(`a claim of 2 leased exactly 2 of ${MANY + 1} rows (${how})`)
  },
}
