// Outbox helpers shared by the suites: fresh tables, bulk seeding, a no-op publisher.
import {randomBytes} from 'node:crypto'
import {applyInit, dialectOf, raw, sql} from './lib-under-test.js'

/** Drops and creates a uniquely named outbox table (plus inbox/archive names, unused). */
export async function freshTables(db, prefix) {
  const tag = `${prefix}_${randomBytes(3).toString('hex')}`
  const names = {outbox: `b_${tag}`, inbox: `b_${tag}_in`, archive: `b_${tag}_ar`}
  await applyInit(db, names, {inbox: false, archive: false})
  return names
}

export async function dropTables(db, names) {
  await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(names, 'outbox'))}`).catch(() => {})
}

/** PostgreSQL: n small pending events in one statement, created_at increasing, then ANALYZE. */
export async function seedPostgres(db, names, n) {
  const table = raw(dialectOf(db).render.table(names, 'outbox'))
  await db.execute(sql`INSERT INTO ${table} (id, event_type, aggregate_id, payload, created_at)
SELECT gen_random_uuid(), 'order.created', 'order-' || i, jsonb_build_object('n', i), clock_timestamp()
FROM generate_series(1, ${n}::int) AS i`)
  await db.execute(sql`ANALYZE ${table}`)
}

/** Acknowledges everything at once; onEvents sees each batch (for latency probes). */
export function noopPublisher(onEvents) {
  return {
    name: 'noop',
    async publish(events) {
      onEvents?.(events)
      return events.map(() => ({ok: true}))
    },
    async close() {},
  }
}
