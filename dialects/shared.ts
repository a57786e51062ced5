// What every dialect builds its parts with: SQL that reads the same on each (parameterised by
// the dialect's quoting and clock), column lists in the schema's order, driver error fields.
// Only the dialect files call these.
import type {ClaimOptions, SavepointSql, TableNames} from './dialect.js'
import {ERROR_KINDS, type DbErrorKind} from './errors.js'
import {compile, inline, join, raw, sql, type Raw, type Sql} from './sql.js'
import type {RenderPart} from './render.js'

/** Derived object names (indexes), kept in one place so DDL, checks and docs agree. */
export function indexNames(names: TableNames) {
  return {
    pending: `${names.outbox}_pending_idx`,
    claim: `${names.outbox}_claim_idx`,
    createdAt: `${names.outbox}_created_at_idx`,
    failed: `${names.outbox}_failed_idx`,
    published: `${names.outbox}_published_idx`,
    inboxAggregate: `${names.inbox}_aggregate_idx`,
    archiveCreatedAt: `${names.archive}_created_at_idx`,
  }
}

/**
 * Unpublished, not failed, lease absent or lapsed by the database clock. The literal
 * `published_at IS NULL AND failed_at IS NULL` must stay literal: it is what lets
 * PostgreSQL and SQLite use the partial pending index.
 */
export function claimablePredicate(now: string, alias = ''): Raw {
  const c = alias ? `${alias}.` : ''
  return raw(
    `${c}published_at IS NULL AND ${c}failed_at IS NULL AND (${c}lease_until IS NULL OR ${c}lease_until < ${now})`,
  )
}

/**
 * Per-aggregate ordering: an event may be claimed only when no older event of the same
 * aggregate is still unpublished (pending or leased), so a retry can never be overtaken.
 */
export function orderingPredicate(table: string, options: ClaimOptions, alias: string, notMarked?: Sql): Sql {
  if (options.ordering !== 'aggregate') return sql``
  // notMarked: a condition on `o` that leaves out the rows this same statement marks published
  // (PostgreSQL's carried mark, which its snapshot still reads as pending)
  return sql` AND NOT EXISTS (SELECT 1 FROM ${raw(table)} o WHERE o.aggregate_id = ${raw(alias)}.aggregate_id${raw(
    ` AND (o.aggregate_type = ${alias}.aggregate_type OR (o.aggregate_type IS NULL AND ${alias}.aggregate_type IS NULL))` +
      ` AND o.published_at IS NULL AND o.failed_at IS NULL` +
      ` AND (o.created_at < ${alias}.created_at OR (o.created_at = ${alias}.created_at AND o.id < ${alias}.id))`,
  )}${notMarked ?? sql``})`
}

export function batchLimit(options: ClaimOptions): Raw {
  // Inlined, not bound: it is a validated positive integer, and MySQL's prepared
  // statements reject a bound LIMIT sent as a double.
  if (!Number.isSafeInteger(options.batch) || options.batch < 1) throw new RangeError(`invalid batch ${options.batch}`)
  return raw(String(options.batch))
}

/** Literals that read the same on every dialect; undefined when the dialect must decide. */
export function commonLiteral(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL'
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`cannot inline ${value}`)
    return String(value)
  }
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE'
  return undefined
}

/** An identifier in the SQL standard's double quotes, quotes doubled (PostgreSQL, SQLite). */
export function doubleQuoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** A dialect's table(): the quoted table name, schema-qualified when a schema is given. */
export function tableReference(quoteIdent: (name: string) => string) {
  return (names: TableNames, which: 'outbox' | 'inbox' | 'archive'): string =>
    names.schema ? `${quoteIdent(names.schema)}.${quoteIdent(names[which])}` : quoteIdent(names[which])
}

/** Single-quoted string with quotes doubled; NUL cannot be stored in any of our text columns. */
export function quoteString(value: string): string {
  if (value.includes('\0')) throw new RangeError('cannot inline a string containing NUL')
  return `'${value.replaceAll("'", "''")}'`
}

/** `?, ?, ?` for an IN list; `NULL` for no ids so the statement stays valid and matches nothing. */
export function idList(ids: readonly string[]): Sql {
  if (ids.length === 0) return sql`NULL`
  return join(ids.map((id) => sql`${id}`))
}

/** Same-aggregate match where aggregate_type may be NULL on both sides. */
export function sameAggregateType(aggregateType: string | null): Sql {
  return aggregateType === null ? sql`aggregate_type IS NULL` : sql`aggregate_type = ${aggregateType}`
}

/** A CREATE TABLE's column lines, `  name type`, in the order given (src/schema/columns.ts): each dialect supplies the types. */
export function columnLines<C extends string>(order: readonly C[], types: Readonly<Record<C, string>>): string {
  return order.map((column) => `  ${column} ${types[column]}`).join(',\n')
}

/**
 * A select list of the columns, in order: `alias.column`, or `expression AS column` where the
 * dialect reads one differently (JSON as text, attempts counting the claim).
 */
export function selectList<C extends string>(columns: readonly C[], alias: string, expressions: Partial<Record<C, string>> = {}): string {
  const prefix = alias ? `${alias}.` : ''
  return columns.map((column) => (expressions[column] ? `${expressions[column]} AS ${column}` : `${prefix}${column}`)).join(', ')
}

/** A driver error's fields as every dialect's classifier reads them: code, errno, and the first line of its message. */
export function errorFields(error: unknown): {code: string; errno: number; message: string} {
  const e = (error ?? {}) as {code?: string | number; errno?: number; message?: string; sqlMessage?: string}
  return {code: String(e.code ?? ''), errno: Number(e.errno), message: String(e.sqlMessage ?? e.message ?? error).split('\n')[0]}
}

/** The first kind, in ERROR_KINDS order, whose test the error passes: each dialect's classify(). */
export function classifier(tests: Partial<Record<DbErrorKind, (e: ReturnType<typeof errorFields>) => boolean>>): (error: unknown) => DbErrorKind | undefined {
  return (error) => {
    const fields = errorFields(error)
    return ERROR_KINDS.find((kind) => tests[kind]?.(fields))
  }
}

/** The render members that follow from a dialect's placeholder and literal: printed and bound SQL come from one fragment. */
export function fragmentRendering(placeholder: (index: number) => string, literal: (value: unknown) => string): Pick<RenderPart, 'placeholder' | 'literal' | 'compile' | 'inline'> {
  return {placeholder, literal, compile: (fragment) => compile(fragment, placeholder), inline: (fragment) => inline(fragment, literal)}
}

/**
 * SAVEPOINT, RELEASE SAVEPOINT and ROLLBACK TO SAVEPOINT as the SQL standard spells them, which
 * PostgreSQL, MySQL/MariaDB and SQLite all accept. The name is ours (a fixed identifier), never
 * user input.
 */
export const STANDARD_SAVEPOINT: SavepointSql = {
  open: (name) => sql`SAVEPOINT ${raw(name)}`,
  release: (name) => sql`RELEASE SAVEPOINT ${raw(name)}`,
  rollbackTo: (name) => sql`ROLLBACK TO SAVEPOINT ${raw(name)}`,
}
