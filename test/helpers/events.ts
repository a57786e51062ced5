// Build outbox states with direct SQL so expected figures are known exactly.
import {randomUUID} from 'node:crypto'
import type {TableNames} from '../../dialects/index.js'
import {raw, sql} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'

export interface SeedOptions {
  count: number
  eventType?: string
  /** created_at = base + i * stepMs */
  base?: Date
  stepMs?: number
  aggregateId?: (i: number) => string
}

/** Inserts `count` events with distinct, increasing created_at; returns ids oldest first. */
export async function seedEvents(db: Db, names: TableNames, options: SeedOptions): Promise<string[]> {
  const base = options.base ?? new Date(Date.now() - 3_600_000)
  const step = options.stepMs ?? 1000
  const ids: string[] = []
  const table = raw(db.dialect.render.table(names, 'outbox'))
  const rows = Array.from({length: options.count}, (_, i) => {
    const id = randomUUID()
    ids.push(id)
    return {id, i}
  })
  for (let start = 0; start < rows.length; start += 500) {
    await db.transaction(async (tx) => {
      for (const {id, i} of rows.slice(start, start + 500)) {
        const created = db.dialect.render.timeParam(new Date(base.getTime() + i * step))
        await tx.execute(sql`INSERT INTO ${table} (id, event_type, aggregate_id, payload, created_at)
VALUES (${id}, ${options.eventType ?? 'order.created'}, ${options.aggregateId?.(i) ?? `agg-${i}`}, ${JSON.stringify({n: i})}, ${created})`)
      }
    })
  }
  return ids
}

export async function count(db: Db, names: TableNames, where = '1=1'): Promise<number> {
  const rows = await db.query<{n: number | string}>(sql`SELECT COUNT(*) AS n FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE ${raw(where)}`)
  return Number(rows[0].n)
}
