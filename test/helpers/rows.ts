// Outbox rows in any state, by direct SQL, with times relative to the database clock.
import {randomUUID} from 'node:crypto'
import type {TableNames} from '../../dialects/index.js'
import {raw, sql} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'

export interface RowSpec {
  id?: string
  type?: string
  aggregateId?: string
  /** seconds relative to `now` (negative = in the past) */
  created: number
  published?: number
  failed?: number
  leaseOwner?: string
  leaseUntil?: number
  attempts?: number
  lastError?: string
  payload?: unknown
}

/** Inserts rows into the outbox (or archive) table; returns their ids in order. */
export async function insertRows(db: Db, names: TableNames, now: Date, rows: RowSpec[], which: 'outbox' | 'archive' = 'outbox'): Promise<string[]> {
  const t = raw(db.dialect.render.table(names, which))
  const at = (s: number | undefined) => (s === undefined ? null : db.dialect.render.timeParam(new Date(now.getTime() + s * 1000)))
  const extra = which === 'archive' ? {col: raw(', archived_at'), val: sql`, ${at(0)}`} : {col: raw(''), val: sql``}
  const ids: string[] = []
  await db.transaction(async (tx) => {
    for (const [i, r] of rows.entries()) {
      const id = r.id ?? randomUUID()
      ids.push(id)
      await tx.execute(sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at, published_at, failed_at, lease_owner, lease_until, attempts, last_error${extra.col})
VALUES (${id}, ${r.type ?? 'order.created'}, ${r.aggregateId ?? `agg-${i}`}, ${JSON.stringify(r.payload ?? {n: i})}, ${at(r.created)}, ${at(r.published)}, ${at(r.failed)},
  ${r.leaseOwner ?? null}, ${at(r.leaseUntil)}, ${r.attempts ?? 0}, ${r.lastError ?? null}${extra.val})`)
    }
  })
  return ids
}

export async function clear(db: Db, names: TableNames): Promise<void> {
  await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
  await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'archive'))}`)
}

export async function ids(db: Db, names: TableNames, which: 'outbox' | 'archive' = 'outbox', where = '1=1'): Promise<string[]> {
  const rows = await db.query<{id: string}>(sql`SELECT id FROM ${raw(db.dialect.render.table(names, which))} WHERE ${raw(where)} ORDER BY id`)
  return rows.map((r) => String(r.id))
}

/** Every column of every row, for "nothing changed" assertions. */
export async function snapshot(db: Db, names: TableNames): Promise<string> {
  const out: unknown[] = []
  for (const which of ['outbox', 'archive'] as const) {
    out.push(await db.query(sql`SELECT * FROM ${raw(db.dialect.render.table(names, which))} ORDER BY id`))
  }
  return JSON.stringify(out)
}

/** Every id of `all` is in exactly one of the outbox and archive tables; returns how many are archived. */
export async function inExactlyOneTable(db: Db, names: TableNames, all: string[]): Promise<number> {
  const outbox = await ids(db, names, 'outbox')
  const archived = await ids(db, names, 'archive')
  const inBoth = outbox.filter((i) => archived.includes(i))
  if (inBoth.length) throw new Error(`in both tables: ${inBoth.slice(0, 5).join(', ')}`)
  const union = [...outbox, ...archived].sort()
  const want = [...all].sort()
  if (JSON.stringify(union) !== JSON.stringify(want)) throw new Error(`the two tables hold ${union.length} ids, expected exactly the ${want.length} events`)
  return archived.length
}

/**
 * `count` published events of history (created `daysAgo` days back, one second apart, published
 * a second after creation), inserted 500 to a statement: enough rows for the planners to prefer
 * an index, quickly.
 */
export async function insertHistory(db: Db, names: TableNames, now: Date, count: number, daysAgo = 3): Promise<void> {
  const t = raw(db.dialect.render.table(names, 'outbox'))
  const at = (s: number) => db.dialect.render.timeParam(new Date(now.getTime() + s * 1000))
  for (let start = 0; start < count; start += 500) {
    const rows = []
    for (let i = start; i < Math.min(count, start + 500); i++) {
      const created = -daysAgo * 86_400 - i
      rows.push(sql`(${randomUUID()}, ${`type${i % 4}`}, ${`agg-${i % 100}`}, '{}', ${at(created)}, ${at(created + 1)}, 1)`)
    }
    const values = rows.reduce((list, row) => sql`${list}, ${row}`)
    await db.execute(sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at, published_at, attempts) VALUES ${values}`)
  }
}
