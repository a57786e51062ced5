// The database side of the runtime tests: the inbox on PostgreSQL, an effects table the
// handlers write to in the inbox transaction, and the counts that prove exactly-once.
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db, type Queryable} from '../../src/db/index.js'
import type {ConsumedEvent} from '../../src/consume/event.js'
import {applyInit} from '../../src/schema/init.js'
import type {ClaimedEvent} from '../../src/schema/event-row.js'
import {PG_URL, dropTables, uniqueTables} from '../helpers/targets.js'

export interface Fixture {
  url: string
  db: Db
  names: TableNames
  effects: string
  /** a handler that records the event in the effects table */
  record(event: ConsumedEvent, tx: Queryable): Promise<void>
  /** effects per event id */
  counts(): Promise<Map<string, number>>
  close(): Promise<void>
}

export async function fixture(prefix: string): Promise<Fixture> {
  const db = await openDb(PG_URL, {poolSize: 6})
  const names = uniqueTables(prefix)
  await applyInit(db, names, {inbox: true, archive: false})
  const effects = `${names.outbox}_fx`
  await db.execute(sql`CREATE TABLE ${raw(effects)} (event_id TEXT NOT NULL, event_type TEXT NOT NULL, payload TEXT)`)
  return {
    url: PG_URL,
    db,
    names,
    effects,
    async record(event, tx) {
      await tx.execute(sql`INSERT INTO ${raw(effects)} (event_id, event_type, payload) VALUES (${event.id}, ${event.eventType}, ${JSON.stringify(event.payload)})`)
    },
    async counts() {
      const rows = await db.query<{event_id: string; n: string}>(sql`SELECT event_id, COUNT(*) AS n FROM ${raw(effects)} GROUP BY event_id`)
      return new Map(rows.map((r) => [r.event_id, Number(r.n)]))
    },
    async close() {
      await db.execute(sql`DROP TABLE IF EXISTS ${raw(effects)}`).catch(() => {})
      await dropTables(db, names)
      await db.close()
    },
  }
}

/** n events as the relay claims them, ids unique to the test. */
export function claimed(n: number, tag: string, eventType = 'order.created'): ClaimedEvent[] {
  return Array.from({length: n}, (_, i) => ({
    id: `0190c3c2-0000-7000-8000-${tag.padEnd(4, '0').slice(0, 4)}${String(i).padStart(8, '0')}`,
    eventType,
    aggregateType: 'order',
    aggregateId: `order-${i}`,
    aggregateVersion: 1,
    payload: JSON.stringify({n: i}),
    headers: null,
    createdAt: new Date(),
    attempts: 1,
  }))
}

/** Every id has exactly one effect (the file's other tests write effects of their own ids). */
export function exactlyOnce(counts: Map<string, number>, ids: string[]): {missing: string[]; repeated: string[]} {
  return {
    missing: ids.filter((id) => !counts.has(id)),
    repeated: ids.filter((id) => (counts.get(id) ?? 0) > 1).map((id) => `${id} x${counts.get(id)}`),
  }
}
