// PostgreSQL: the mark's ids are joined as a set. A prepared statement settles on a generic plan,
// and there `id = ANY($ids)` is a filter that walks the bound array for every row it reads:
// 1000 x 1000 comparisons for a batch of 1000 (bench/results/peers-rowlease.md).
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {seedEvents} from '../helpers/events.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const [target] = await targets(['postgres'])

describe.skipIf(!target.available)('postgres: the mark on a generic plan', () => {
  let db: Db
  let names: TableNames

  beforeAll(async () => {
    ;({db, names} = await openTables(target.url, 'mkp', {inbox: false, archive: false}))
  })
  afterAll(() => closeTables(db, names))

  it('reads the ids through a set, never an array tested row by row', async () => {
    const ids = await seedEvents(db, names, {count: 200})
    const createdAt = {from: new Date(Date.now() - 7_200_000), to: new Date()}
    const {text, params} = db.dialect.render.compile(db.dialect.relay.markPublished(names, ids.slice(0, 100), createdAt))
    // EXECUTE's arguments as text literals, cast by the statement's own $n::type
    const args = params.map((p) => `'${Array.isArray(p) ? `{${p.join(',')}}` : p instanceof Date ? p.toISOString() : String(p)}'`)
    const plan = await db.transaction(async (tx) => {
      await tx.execute(sql`SET LOCAL plan_cache_mode = force_generic_plan`)
      await tx.execute(sql`PREPARE outbox_mark_plan AS ${raw(text)}`)
      try {
        const rows = await tx.query<{'QUERY PLAN': string}>(sql`EXPLAIN EXECUTE outbox_mark_plan(${raw(args.join(', '))})`)
        return rows.map((r) => r['QUERY PLAN']).join('\n')
      } finally {
        await tx.execute(sql`DEALLOCATE outbox_mark_plan`)
      }
    })
    expect(plan).not.toMatch(/= ANY/)
    expect(plan).toMatch(/unnest/)
  })
})
