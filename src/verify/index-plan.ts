// MySQL/MariaDB: without an index that serves ORDER BY created_at, id, InnoDB sorts and locks
// every pending row, and a second relay gets nothing (DIALECTS.md). EXPLAIN must show no filesort.
// Where a sort locks nothing more, the dialect says so (VerifyPart.notApplicable.index).
import type {Check} from './check.js'
import {fail, pass} from './check.js'

interface ExplainRow {
  type?: string
  key?: string | null
  Extra?: string | null
}

export const indexCheck: Check = {
  id: 'index',
  title: 'claim ORDER BY served by an index',
  async run(ctx) {
    await ctx.reset()
    await ctx.seed(200)
    await ctx.db.execute(ctx.dialect.verify.analyze(ctx.names))
    const plan = ctx.plan({batch: 25, leaseMs: 60_000, owner: 'outbox-verify-explain'})
    const lock = plan.kind === 'lock-then-update' ? plan.lock : plan.statement
    const rows = await ctx.db.query<ExplainRow>(ctx.dialect.verify.explain(lock))
    const sorted = rows.find((r) => /filesort/i.test(r.Extra ?? ''))
    const scanned = rows.find((r) => r.type === 'ALL')
    if (sorted || scanned) {
      return fail(`EXPLAIN of the claim shows ${sorted ? `"${sorted.Extra}"` : 'a full table scan'}: it sorts and locks every pending row. Create the claim index with outbox init`)
    }
    const keys = rows.map((r) => r.key).filter(Boolean)
    return pass(`EXPLAIN: the claim reads index ${keys.join(', ') || '?'} in ORDER BY order, no filesort`)
  },
}
