// Kysely builds the portable ops queries; they run through our Db (its transactions, the
// SQLite mutex and BEGIN IMMEDIATE) as Sql fragments, so there is one execution path.
import type {CompiledQuery, Kysely, RawBuilder} from 'kysely'
import {Sql, type TableNames} from '../../dialects/index.js'
import type {Db, Queryable, QueryOptions, Row} from '../db/index.js'

export interface OpsContext {
  db: Db
  names: TableNames
  k: Kysely<any>
}

export async function opsContext(db: Db, names: TableNames): Promise<OpsContext> {
  const base = await db.kysely()
  return {db, names, k: names.schema ? base.withSchema(names.schema) : base}
}

/** Compiled Kysely SQL back to a fragment: placeholders outside quotes become bound values. */
export function fromCompiled(compiled: CompiledQuery): Sql {
  const text = compiled.sql
  const chunks: string[] = []
  const order: number[] = []
  let current = ''
  let next = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === "'" || c === '"' || c === '`') {
      const end = text.indexOf(c, i + 1)
      const stop = end === -1 ? text.length : end
      current += text.slice(i, stop + 1)
      i = stop
    } else if (c === '?') {
      chunks.push(current)
      current = ''
      order.push(next++)
    } else if (c === '$' && /\d/.test(text[i + 1] ?? '')) {
      const m = /^\$(\d+)/.exec(text.slice(i))!
      chunks.push(current)
      current = ''
      order.push(Number(m[1]) - 1)
      i += m[0].length - 1
    } else current += c
  }
  chunks.push(current)
  return new Sql(chunks, order.map((index) => compiled.parameters[index]))
}

type Compilable = {compile(): CompiledQuery}

/** A raw `sql` statement (queries embedded in it compile as subqueries) made runnable like a query builder. */
export function compiled(k: Kysely<any>, statement: RawBuilder<unknown>): Compilable {
  return {compile: () => statement.compile(k)}
}

export function run<R = Row>(target: Queryable, query: Compilable, options?: QueryOptions): Promise<R[]> {
  return target.query<R>(fromCompiled(query.compile()), options)
}

export function exec(target: Queryable, query: Compilable, options?: QueryOptions): Promise<number> {
  return target.execute(fromCompiled(query.compile()), options)
}

/**
 * For a statement every batch sends again with only its values changed: the server keeps it
 * parsed (and PostgreSQL, once its plan proves stable, planned) per connection. PostgreSQL,
 * 1M-row archive at --batch 1000: parse and plan were ~1.2 ms of a ~12.5 ms batch (server log).
 */
export const REPEATED: QueryOptions = {prepare: true}

/** The database clock, read once so every figure of one report refers to the same instant. */
export async function databaseNow(db: Queryable & {dialect: Db['dialect']}): Promise<Date> {
  const {raw, sql} = await import('../../dialects/index.js')
  const rows = await db.query(sql`SELECT ${raw(db.dialect.now)} AS now`)
  return db.dialect.parseTime(rows[0].now) as Date
}

export function num(value: unknown): number {
  return value == null ? 0 : Number(value)
}

/** A Date as is; text as ISO-8601 or a duration meaning "ago" on the database clock. */
export async function pointInTime(value: Date | string, flag: string, now: Date): Promise<Date> {
  if (value instanceof Date) return value
  const {parseTimePoint} = await import('../time.js')
  return parseTimePoint(value, flag, now)
}

/** Keyset position after the last row of a batch: (created_at, id), created_at at full precision. */
export interface Cursor {
  at: string
  id: string
}
