// One path from an ops query to the SQL our Db runs. Kysely builds the portable queries and
// compiles them for the Db they run on (Db.kysely(): same database, same placeholder syntax);
// the CompiledQuery's text and parameters run through our Db as a precompiled Sql fragment,
// as they are: one execution path (its transactions, the SQLite mutex and BEGIN IMMEDIATE, the
// drivers' per-text caches), and nothing reads the compiled text again. What is printed (the
// status statements a test or a user wraps in EXPLAIN) is the same fragment that runs.
import type {CompiledQuery, Kysely, RawBuilder} from 'kysely'
import {precompiled, Sql} from '../../dialects/sql.js'
import type {Queryable, QueryOptions, Row} from '../db/index.js'
import {isBatchSlot} from './templates.js'

export type Compilable = {compile(): CompiledQuery}

/** A raw `sql` statement (queries embedded in it compile as subqueries) made compilable like a query builder. */
export function compiled(k: Kysely<any>, statement: RawBuilder<unknown>): Compilable {
  return {compile: () => statement.compile(k)}
}

/** Kysely's compiled statement as the fragment the Db runs. */
export function compiledSql(query: CompiledQuery): Sql {
  return precompiled(query.sql, query.parameters)
}

/** A Kysely query, or a fragment already (a bound Template). A query built with per-batch markers must go through a Template. */
export function toSql(query: Compilable | Sql): Sql {
  if (query instanceof Sql) return query
  const statement = compiledSql(query.compile())
  if (statement.values.some(isBatchSlot)) throw new Error('a statement built with per-batch values was run without binding them (Template)')
  return statement
}

export function run<R = Row>(target: Queryable, query: Compilable | Sql, options?: QueryOptions): Promise<R[]> {
  return target.query<R>(toSql(query), options)
}

export function exec(target: Queryable, query: Compilable | Sql, options?: QueryOptions): Promise<number> {
  return target.execute(toSql(query), options)
}

/**
 * For a statement every batch sends again with only its values changed: the server keeps it
 * parsed (and PostgreSQL, once its plan proves stable, planned) per connection, which saves
 * each batch its parse and plan (BENCHMARKS.md, figures behind the code's choices).
 */
export const REPEATED: QueryOptions = {prepare: true}
