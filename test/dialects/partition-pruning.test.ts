// PostgreSQL plans a statement over every partition it cannot leave out before running it; a
// bound known only at run time (a subquery, the oldest pending row) prunes after that planning.
// On an outbox partitioned by day from 10 days back, the relay's claim and status's pending
// count, given their bounds as values, plan only the ranges at or after them (EXPLAIN with the
// values bound, as the relay's custom plans get them). The claim still claims the same rows.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type ClaimOptions, type Sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {opsContext, databaseNow} from '../../src/ops/query.js'
import {pendingStatement, readStatus} from '../../src/ops/status.js'
import {claimBatch} from '../../src/relay/claim.js'
import {initPlan} from '../../src/schema/init.js'
import {ensurePartitions} from '../../src/ops/partitions-ensure.js'
import {readLayout} from '../../src/ops/partitions.js'
import {insertRows} from '../helpers/rows.js'
import {dropTables, targets, uniqueTables} from '../helpers/targets.js'

const DAY = 86_400
const [target] = await targets(['postgres'])

describe.skipIf(!target.available)('partition pruning at plan time on postgres', () => {
  let db: Db
  let names: TableNames
  let now: Date
  let today: number
  const label = (d: number) => `p${new Date(today + d * DAY * 1000).toISOString().slice(0, 10).replaceAll('-', '')}`

  beforeAll(async () => {
    db = await openDb(target.url)
    names = uniqueTables('pp')
    now = await databaseNow(db)
    today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
    for (const s of initPlan(db.dialect, names, {inbox: false, archive: false, partitionBy: 'day'}, new Date(today - 10 * DAY * 1000)).filter((s) => !s.repairOnly)) {
      await db.execute(sql`${raw(s.sql.replace(/;\s*$/, ''))}`)
    }
    await ensurePartitions(db, names, {aheadMs: 7 * DAY * 1000}) // and on to a week ahead
    const day = (d: number) => (today - now.getTime()) / 1000 + d * DAY
    // published history on days -10 .. -1, pending events today
    await insertRows(db, names, now, [
      ...[-10, -7, -4, -1].map((d) => ({created: day(d) + 60, published: day(d) + 120})),
      ...[0, 1, 2, 3].map((i) => ({created: -600 + i})),
    ])
  })
  afterAll(async () => {
    if (db) await dropTables(db, names)
    await db?.close()
  })

  /** the partitions a statement's plan names (EXPLAIN with its values bound: a custom plan) */
  async function planned(statement: Sql): Promise<Set<string>> {
    const rows = await db.query<{'QUERY PLAN': string}>(sql`EXPLAIN ${statement}`)
    const text = rows.map((r) => r['QUERY PLAN']).join('\n')
    return new Set([...text.matchAll(new RegExp(`${names.outbox}_(p\\d{8}|default)`, 'g'))].map((m) => m[1]))
  }
  /** the ranges a plan names that end before the day of `from` (a mark an hour back is yesterday's just after midnight) */
  const before = (partitions: Set<string>, from: Date) => [...partitions].filter((p) => p !== 'default' && p < `p${from.toISOString().slice(0, 10).replaceAll('-', '')}`)

  it("the claim from the low-water mark plans none of the ranges before it, the lease UPDATE's included", async () => {
    const mark = new Date(now.getTime() - 3_600_000)
    const options: ClaimOptions = {batch: 2, leaseMs: 30_000, owner: 'relay-pp', from: mark.toISOString()}
    const plan = db.dialect.relay.claim(names, options)
    if (plan.kind !== 'update-returning') throw new Error('PostgreSQL claims in one statement')
    const partitions = await planned(plan.statement)
    expect([...partitions]).toContain(label(0))
    expect(before(partitions, mark)).toEqual([])
    // a carried mark bounded by its batch's span: the same
    const first = await claimBatch(db, names, options)
    expect(first).toHaveLength(2)
    const carried = db.dialect.relay.claim(names, {...options, mark: {ids: first.map((e) => e.id), createdAt: {from: new Date(now.getTime() - 601_000), to: now}}})
    if (carried.kind !== 'update-returning') throw new Error('PostgreSQL claims in one statement')
    expect(before(await planned(carried.statement), mark)).toEqual([])
    // and it claims what the unbounded claim would: the other two, oldest first
    const second = await claimBatch(db, names, {...options, owner: 'relay-pp2'})
    expect(second).toHaveLength(2)
    const times = [...first, ...second].map((e) => e.createdAt.getTime())
    expect(times).toEqual([...times].sort((a, b) => a - b))
    expect(new Set([...first, ...second].map((e) => e.id)).size).toBe(4)
  })

  it("status's pending count from the oldest pending event plans only the ranges from its day on", async () => {
    const ctx = await opsContext(db, names)
    const oldest = new Date(now.getTime() - 600_000)
    expect(before(await planned(pendingStatement(ctx, now)), oldest)).not.toEqual([])
    expect(before(await planned(pendingStatement(ctx, now, oldest)), oldest)).toEqual([])
  })

  // The reads that cannot be bounded (oldest pending, failed, the window) take no parameter, and
  // status's snapshot asks for generic plans (batches.snapshotFirst): the server plans each once
  // per connection, the pending count too (its ranges before the oldest pending event pruned at
  // executor start-up), not once a read.
  it("status's reads are planned once per connection, not once a read", async () => {
    const one = await openDb(target.url, {poolSize: 1}) // one session: pg_prepared_statements is per session
    try {
      for (let i = 0; i < 3; i++) await readStatus(one, names, {windowMs: 3_600_000})
      const prepared = await one.query<{statement: string; generic_plans: number; custom_plans: number}>(
        sql`SELECT statement, generic_plans::int AS generic_plans, custom_plans::int AS custom_plans FROM pg_prepared_statements WHERE statement LIKE ${`%${names.outbox}%`}`,
      )
      const plans = (read: RegExp) => prepared.filter((p) => read.test(p.statement)).map((p) => [p.custom_plans, p.generic_plans])
      expect(plans(/failed_at IS NOT NULL/)).toEqual([[0, 3]])
      expect(plans(/ROW_NUMBER\(\) OVER \(ORDER BY/)).toEqual([[0, 3]])
      expect(plans(/order by "created_at"/i)).toEqual([[0, 3]])
      expect(plans(/SUM\(CASE/)).toEqual([[0, 3]])
    } finally {
      await one.close()
    }
  })

  // status keeps the layout it read (src/ops/layout-cache.ts) only while the partitions' catalog rows stay as they were
  it('status on the same Db reads where the last range ends again once ranges are added or one is detached', async () => {
    const ends = async () => (await readStatus(db, names, {windowMs: 60_000})).partitions!.lastEndsAt
    const before = await ends()
    expect(await ends()).toBe(before)
    await ensurePartitions(db, names, {aheadMs: 10 * DAY * 1000})
    const added = await ends()
    expect(new Date(added).getTime() - new Date(before).getTime()).toBe(3 * DAY * 1000)
    const last = (await readLayout(db, db.dialect, names))!.partitions.find((p) => p.to === added)!
    const partition = db.dialect.render.table({...names, outbox: last.name}, 'outbox')
    await db.execute(sql`ALTER TABLE ${raw(db.dialect.render.table(names, 'outbox'))} DETACH PARTITION ${raw(partition)}`)
    try {
      expect(await ends()).toBe(last.from)
    } finally {
      await db.execute(sql`DROP TABLE ${raw(partition)}`)
    }
  })
})
