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

/**
 * Compiled Kysely SQL back to a fragment: placeholders outside quotes become bound values.
 * Cuts the text into slices between placeholders: the row-by-row batches compile their
 * statements for every batch, and building the text char by char was a third of a batch's
 * allocations (PostgreSQL archive, before its statements became templates).
 */
export function fromCompiled(compiled: CompiledQuery): Sql {
  const text = compiled.sql
  const chunks: string[] = []
  const order: number[] = []
  let start = 0
  let next = 0
  let i = 0
  while (i < text.length) {
    const c = text[i]
    if (c === "'" || c === '"' || c === '`') {
      const end = text.indexOf(c, i + 1)
      i = end === -1 ? text.length : end + 1
    } else if (c === '?') {
      chunks.push(text.slice(start, i))
      order.push(next++)
      start = ++i
    } else if (c === '$' && isDigit(text, i + 1)) {
      let j = i + 1
      while (isDigit(text, j)) j++
      chunks.push(text.slice(start, i))
      order.push(Number(text.slice(i + 1, j)) - 1)
      start = i = j
    } else i++
  }
  chunks.push(text.slice(start))
  return new Sql(chunks, order.map((index) => compiled.parameters[index]))
}

function isDigit(text: string, at: number): boolean {
  const code = text.charCodeAt(at)
  return code >= 48 && code <= 57
}

export type Compilable = {compile(): CompiledQuery}

// A stand-in value starts with NUL, which no value bound here holds (PostgreSQL refuses it in
// text); run() and exec() refuse a statement that still holds one.
const SLOT = '\u0000slot:'

/**
 * A stand-in for a value that changes from batch to batch (the keyset cursor, a lease
 * instant): a statement built once with stand-ins is a template (templateOf) that each batch
 * binds its own values into (bindSlots), instead of building and compiling it again with
 * Kysely (~0.35 ms of a ~6.5 ms PostgreSQL archive batch, and most of its allocations).
 */
export function slot(name: string): string {
  return SLOT + name
}

/** A statement built with stand-ins, compiled once; its stand-ins must all be bound values, never inlined text. */
export function templateOf(query: Compilable): Sql {
  const template = fromCompiled(query.compile())
  if (template.chunks.some((chunk) => chunk.includes(SLOT))) throw new Error('a statement template inlined a stand-in value into its text')
  return template
}

function isSlot(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(SLOT)
}

/** The template with each stand-in replaced by the value of the same name; a stand-in without one is a bug. */
export function bindSlots(template: Sql, values: Readonly<Record<string, unknown>>): Sql {
  let bound: unknown[] | undefined
  template.values.forEach((value, i) => {
    if (!isSlot(value)) return
    const name = value.slice(SLOT.length)
    if (values[name] === undefined) throw new Error(`statement slot ${name} has no value`)
    bound ??= [...template.values]
    bound[i] = values[name]
  })
  return bound ? new Sql(template.chunks, bound) : template
}

/** A raw `sql` statement (queries embedded in it compile as subqueries) made runnable like a query builder. */
export function compiled(k: Kysely<any>, statement: RawBuilder<unknown>): Compilable {
  return {compile: () => statement.compile(k)}
}

/** A Kysely query, or a fragment already (a bound template). A query built with stand-ins must have gone through bindSlots. */
export function fragment(query: Compilable | Sql): Sql {
  if (query instanceof Sql) return query
  const built = fromCompiled(query.compile())
  if (built.values.some(isSlot)) throw new Error('a statement built with stand-in values was run without binding them')
  return built
}

export function run<R = Row>(target: Queryable, query: Compilable | Sql, options?: QueryOptions): Promise<R[]> {
  return target.query<R>(fragment(query), options)
}

export function exec(target: Queryable, query: Compilable | Sql, options?: QueryOptions): Promise<number> {
  return target.execute(fragment(query), options)
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
