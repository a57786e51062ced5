// PostgreSQL: the row lease's UPDATE (lease_owner, lease_until, attempts: in no index) is a HOT
// update when its page has room for the new versions, which the outbox's fillfactor leaves: no
// index entries for it, the mark's the only ones (bench/results/peers-rowlease.md).
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {claimOn} from '../../src/relay/claim.js'
import {seedEvents} from '../helpers/events.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const [target] = await targets(['postgres'])

describe.skipIf(!target.available)('postgres: the claim leases in place', () => {
  let db: Db
  let names: TableNames

  beforeAll(async () => {
    ;({db, names} = await openTables(target.url, 'hot', {inbox: false, archive: false}))
  })
  afterAll(() => closeTables(db, names))

  it('every lease of a claimed batch is a heap-only update', async () => {
    await seedEvents(db, names, {count: 300})
    const outbox = db.dialect.render.table(names, 'outbox')
    const plan = db.dialect.relay.claim(names, {batch: 300, leaseMs: 30_000, owner: 'hot'})
    // the transaction's own counters, read before it ends: no wait for the statistics to flush
    const {claimed, updated, hot} = await db.transaction(async (tx) => {
      const events = await claimOn(tx, db.dialect, plan)
      const [row] = await tx.query<{updated: string; hot: string}>(
        sql`SELECT pg_stat_get_xact_tuples_updated(${outbox}::regclass) AS updated, pg_stat_get_xact_tuples_hot_updated(${outbox}::regclass) AS hot`,
      )
      return {claimed: events.length, updated: Number(row.updated), hot: Number(row.hot)}
    })
    expect(claimed).toBe(300)
    expect(updated).toBe(300)
    // nearly all: the lease's version is larger than the inserted one (lease_owner and
    // lease_until were NULL), so a page of small rows fits most of them, not every one
    // (284 of 300 here; at fillfactor 80, 79)
    expect(hot).toBeGreaterThanOrEqual(270)
  })

  it('the outbox is created with the fillfactor that leaves the room', async () => {
    const outbox = db.dialect.render.table(names, 'outbox')
    const [row] = await db.query<{options: string[]}>(sql`SELECT reloptions AS options FROM pg_class WHERE oid = ${outbox}::regclass`)
    expect(row.options).toContain('fillfactor=50')
  })
})
