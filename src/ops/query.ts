// What every ops command shares: its context (the Db, the table names, Kysely for the portable
// queries: statements.ts runs them), the database clock and the keyset cursor.
import type {Kysely} from 'kysely'
import type {TableNames} from '../../dialects/index.js'
import type {Db, Queryable} from '../db/index.js'
import {run} from './statements.js'

export interface OpsContext {
  db: Db
  names: TableNames
  k: Kysely<any>
}

export async function opsContext(db: Db, names: TableNames): Promise<OpsContext> {
  const base = await db.kysely()
  return {db, names, k: names.schema ? base.withSchema(names.schema) : base}
}

/** The database clock, read once so every figure of one report refers to the same instant. */
export async function databaseNow(db: Pick<Queryable, 'query'> & {dialect: Db['dialect']}): Promise<Date> {
  const {raw, sql} = await import('../../dialects/index.js')
  const rows = await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`)
  return db.dialect.render.parseTime(rows[0].now) as Date
}

export function num(value: unknown): number {
  return value == null ? 0 : Number(value)
}

/** A Date as is; text as ISO-8601 or a duration meaning "ago" on the database clock. */
export async function pointInTime(value: Date | string, flag: string, now: Date): Promise<Date> {
  if (value instanceof Date) return value
  const {parseTimePoint} = await import('../core/time.js')
  return parseTimePoint(value, flag, now)
}

/** Keyset position after the last row of a batch: (created_at, id), created_at at full precision. */
export interface Cursor {
  at: string
  id: string
}

/** Refuses up front, before a dry run counts or a file is opened, when the archive table is missing (describeDbError names it). */
export async function requireArchiveTable(ctx: OpsContext): Promise<void> {
  const {sql} = await import('kysely')
  await run(ctx.db, ctx.k.selectFrom(ctx.names.archive).select(sql<number>`1`.as('one')).where(sql<boolean>`1 = 0`))
}
