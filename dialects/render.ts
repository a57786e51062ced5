// RenderPart: writing SQL text for one database. Every other part builds its statements with
// these, and `outbox sql` prints through them, so the text run and the text shown agree.
import type {TableNames} from './dialect.js'
import type {Compiled, Sql} from './sql.js'

export interface RenderPart {
  /** longest identifier the database accepts; table names are checked against it (less their index suffixes) */
  readonly maxIdentifierLength: number
  /**
   * Tables may live in a named schema (TableNames.schema, --schema). True on PostgreSQL; false
   * where a schema is a database named in the URL (MySQL) or there is none (SQLite): --schema
   * is refused there.
   */
  readonly schemas: boolean
  /** an identifier quoted for this database, quotes inside it doubled */
  quoteIdent(name: string): string
  /** schema-qualified, quoted table reference */
  table(names: TableNames, which: keyof Omit<TableNames, 'schema'>): string
  /** the bound-parameter marker for the index-th value, from 1 ($1 on PostgreSQL, ? elsewhere) */
  placeholder(index: number): string
  /** a value as an escaped SQL literal, for printing runnable SQL; throws for a value it cannot inline */
  literal(value: unknown): string
  /** the fragment as text with placeholders and its values in order, as the driver binds them */
  compile(fragment: Sql): Compiled
  /** the fragment as runnable text, each value inlined with literal() */
  inline(fragment: Sql): string
  /** the database clock, as used by leases (never the host clock) */
  readonly now: string
  /** a Date as the parameter this dialect's timestamp columns compare against */
  timeParam(date: Date): unknown
  /** text the database stores for a timestamp column, back to a Date (null stays null) */
  parseTime(value: unknown): Date | null
}
