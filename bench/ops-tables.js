// The ops suite's tables: named per run, created fresh, filled in bulk with history and a backlog.
import {applyInit, databaseNow, dialectOf, raw, sql} from './lib-under-test.js'

export const names = (tag) => ({outbox: `bench_ops_${tag}`, inbox: `bench_ops_${tag}_in`, archive: `bench_ops_${tag}_ar`})

// ---- bulk loading (INSERT ... SELECT from a series, never row by row) ----
// History: published 1 s after creation, created 3+ days ago, 10 ms apart. Row i is i * 10 ms
// older than row 1, and rows are laid down the way the producer writes them: ids time-ordered
// like its UUIDv7 (ID_TOP - i, so they ascend with created_at) and inserted oldest first.
const ID_TOP = 0xffffffffff
// Backlog: 1000 pending (200 in flight, 100 lapsed leases, 100 retrying), 50 failed, 1000
// published over the last 30 minutes.
const HISTORY = {
  postgres: (t, from, to) => sql`INSERT INTO ${raw(t)} (id, event_type, aggregate_id, payload, created_at, published_at, attempts)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(${raw(String(ID_TOP))} - i), 12, '0'))::uuid, 'type' || (i % 4), 'agg-' || (i % 1000), '{"n":1}'::jsonb,
  now() - interval '3 days' - i * interval '10 milliseconds', now() - interval '3 days' - i * interval '10 milliseconds' + interval '1 second', 1
FROM generate_series(${raw(String(to))}, ${raw(String(from))}, -1) i`,
  mysql: (t, from, to) => sql`INSERT INTO ${raw(t)} (id, event_type, aggregate_id, payload, created_at, published_at, attempts)
SELECT CONCAT('00000000-0000-7000-8000-', LPAD(LOWER(HEX(${raw(String(ID_TOP))} - seq)), 12, '0')), CONCAT('type', seq % 4), CONCAT('agg-', seq % 1000), '{"n":1}',
  UTC_TIMESTAMP(6) - INTERVAL 3 DAY - INTERVAL seq * 10000 MICROSECOND, UTC_TIMESTAMP(6) - INTERVAL 3 DAY - INTERVAL seq * 10000 MICROSECOND + INTERVAL 1 SECOND, 1
FROM seq_${raw(String(to))}_to_${raw(String(from))}`,
  sqlite: (t, from, to) => sql`WITH RECURSIVE s(i) AS (SELECT ${raw(String(to))} UNION ALL SELECT i - 1 FROM s WHERE i > ${raw(String(from))})
INSERT INTO ${raw(t)} (id, event_type, aggregate_id, payload, created_at, published_at, attempts)
SELECT printf('00000000-0000-7000-8000-%012x', ${raw(String(ID_TOP))} - i), 'type' || (i % 4), 'agg-' || (i % 1000), '{"n":1}',
  strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-3 days', printf('-%.3f seconds', i * 0.01)),
  strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-3 days', printf('%+.3f seconds', 1 - i * 0.01)), 1 FROM s`,
}

export async function loadHistory(db, n, from, to) {
  const t = dialectOf(db).render.table(n, 'outbox')
  const step = db.dialect.name === 'sqlite' ? 500_000 : 1_000_000
  for (let a = from; a <= to; a += step) {
    const b = Math.min(to, a + step - 1)
    if (db.dialect.name === 'sqlite') await db.transaction((tx) => tx.execute(HISTORY.sqlite(t, a, b)))
    else await db.execute(HISTORY[db.dialect.name](t, a, b))
  }
  await analyze(db, n)
}

export async function loadBacklog(db, n) {
  const t = raw(dialectOf(db).render.table(n, 'outbox'))
  const now = await databaseNow(db)
  const at = (s) => (s === null ? null : dialectOf(db).render.timeParam(new Date(now.getTime() + s * 1000)))
  const rows = []
  for (let i = 0; i < 1000; i++) {
    const lease = i < 200 ? ['relay', 600, 1] : i < 300 ? ['relay', -60, 1] : i < 400 ? [null, 30, 2] : [null, null, 0]
    rows.push({created: -1200 + i, published: null, failed: null, lease})
  }
  for (let i = 0; i < 50; i++) rows.push({created: -5000 + i, published: null, failed: -100, lease: [null, null, 5]})
  for (let i = 0; i < 1000; i++) rows.push({created: -1800 + i, published: -1800 + i + (i % 10) / 10, failed: null, lease: [null, null, 1]})
  await db.transaction(async (tx) => {
    for (const [i, r] of rows.entries()) {
      const id = `10000000-0000-7000-8000-${i.toString(16).padStart(12, '0')}`
      await tx.execute(sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at, published_at, failed_at, lease_owner, lease_until, attempts)
VALUES (${id}, ${`type${i % 4}`}, ${`agg-${i}`}, '{"n":1}', ${at(r.created)}, ${at(r.published)}, ${at(r.failed)}, ${r.lease[0]}, ${at(r.lease[1])}, ${r.lease[2]})`)
    }
  })
}

// PostgreSQL: VACUUM too, as autovacuum would in production. Without it a freshly loaded table
// has no visibility map (index-only scans visit the heap) and an insert-triggered autovacuum
// starts during whatever is measured next (seen: status on 10M rows at 14.9 ms against 3.8-4.8).
async function analyze(db, n) {
  const t = raw(dialectOf(db).render.table(n, 'outbox'))
  if (db.dialect.name === 'mysql') await db.query(sql`ANALYZE TABLE ${t}`)
  else if (db.dialect.name === 'postgres') await db.execute(sql`VACUUM (ANALYZE) ${t}`)
  else await db.execute(sql`ANALYZE ${t}`)
}

export async function fresh(db, n) {
  for (const which of ['outbox', 'inbox', 'archive']) await db.execute(sql`DROP TABLE IF EXISTS ${raw(dialectOf(db).render.table(n, which))}`)
  await applyInit(db, n, {inbox: false, archive: true})
}

