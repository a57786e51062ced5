// Our Sql on a driver's own connection: compiled by the dialect, run by the driver part's
// RunSql. What a Consumer on an app's executor and SQLite's Db run their statements through.
import type {Dialect, RunSql, Sql} from '../../dialects/index.js'
import type {Queryable, Row} from './types.js'

export function queryableOn(dialect: Dialect, run: RunSql): Queryable {
  const compiled = (statement: Sql) => {
    const {text, params} = dialect.render.compile(statement)
    return run(text, params)
  }
  return {
    query: async <R = Row>(statement: Sql) => (await compiled(statement)).rows as R[],
    execute: async (statement: Sql) => (await compiled(statement)).affected,
  }
}
