// Server version, SKIP LOCKED support, and the isolation level the claim runs at.
import type {Check} from './check.js'
import {fail, notApplicable, pass} from './check.js'

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
    const query = ctx.dialect.verify.isolationLevel(ctx.version)
    if (!query) return notApplicable('SQLite: one writer at a time, transactions are serializable')
    const session = await ctx.session()
    const [row] = await session.transaction((tx) => tx.query<{level: string}>(query))
    const level = String(row.level)
    if (/read.committed/i.test(level)) return pass(`claim transactions run at ${level}`)
    return fail(
      `claim transactions run at ${level}, not READ COMMITTED` +
        (ctx.dialect.name === 'mysql' ? ': gap locks would block producers. The relay sets it per connection; check nothing overrides it' : ': a changed locked row becomes an error. Check default_transaction_isolation'),
    )
  },
}
