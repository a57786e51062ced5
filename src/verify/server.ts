// Server version, SKIP LOCKED support, and the isolation level the claim runs at.
import type {Check} from './check.js'
import {fail, pass} from './check.js'

export const serverCheck: Check = {
  id: 'server',
  title: 'server version, SKIP LOCKED',
  async run(ctx) {
    const {ok, detail} = ctx.dialect.verify.claimSupport(ctx.version)
    return ok ? pass(detail) : fail(detail)
  },
}

// PostgreSQL: at REPEATABLE READ or SERIALIZABLE a changed locked row is an error. MySQL:
// at REPEATABLE READ the claim's gap locks block producers' INSERTs (DIALECTS.md).
export const isolationCheck: Check = {
  id: 'isolation',
  title: 'READ COMMITTED in effect',
  async run(ctx) {
    // defined wherever this check applies (VerifyPart.notApplicable.isolation says why not)
    const query = ctx.dialect.verify.isolationLevel(ctx.version)!
    const session = await ctx.session()
    const [row] = await session.transaction((tx) => tx.query<{level: string}>(query))
    const level = String(row.level)
    if (/read.committed/i.test(level)) return pass(`claim transactions run at ${level}`)
    const breaks = ctx.dialect.verify.notReadCommitted
    return fail(`claim transactions run at ${level}, not READ COMMITTED${breaks ? `: ${breaks}` : ''}`)
  },
}
