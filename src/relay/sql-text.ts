// `outbox sql ...`: the relay's own statements, printed inlined (runnable) or parameterised.
import type {ClaimOptions, CreatedSpan, Dialect, RetryInput, TableNames} from '../../dialects/index.js'
import type {Sql} from '../../dialects/index.js'

export type SqlStyle = 'inline' | 'params'

export interface PrintedStatement {
  sql: string
  params?: unknown[]
}

function print(dialect: Dialect, statements: Sql[], style: SqlStyle): PrintedStatement[] {
  return statements.map((s) => {
    if (style === 'inline') return {sql: dialect.render.inline(s) + ';'}
    const {text, params} = dialect.render.compile(s)
    return {sql: text + ';', params}
  })
}

/** The claim exactly as the relay runs it (with options.mark: carrying that mark). MySQL: the whole transaction. */
export function claimSql(dialect: Dialect, names: TableNames, options: ClaimOptions, style: SqlStyle): PrintedStatement[] {
  if (style === 'inline') return [{sql: dialect.relay.claimScript(names, options)}]
  const plan = dialect.relay.claim(names, options)
  const mark = plan.mark ? [plan.mark] : []
  if (plan.kind === 'update-returning') {
    if (mark.length === 0) return print(dialect, [plan.statement], style)
    return [{sql: 'BEGIN;'}, ...print(dialect, [...mark, plan.statement], style), {sql: 'COMMIT;'}]
  }
  const placeholderIds = ['<id 1>', '<id 2>']
  // the relay bounds the UPDATE by its batch's created_at (the partitions it reads): printed, never run
  const placeholderSpan = {from: '<created_at of id 1>', to: '<created_at of id 2>'} as unknown as CreatedSpan
  return [
    ...print(dialect, plan.session, style),
    {sql: 'START TRANSACTION;'},
    ...print(dialect, [...mark, plan.lock, plan.update(placeholderIds, placeholderSpan)], style),
    {sql: 'COMMIT;'},
  ]
}

export function markPublishedSql(dialect: Dialect, names: TableNames, ids: string[], style: SqlStyle): PrintedStatement[] {
  return print(dialect, [dialect.relay.markPublished(names, ids)], style)
}

export function retrySql(dialect: Dialect, names: TableNames, input: RetryInput, style: SqlStyle): PrintedStatement[] {
  return print(dialect, [dialect.relay.retry(names, input)], style)
}

export function releaseSql(dialect: Dialect, names: TableNames, ids: string[], owner: string, style: SqlStyle): PrintedStatement[] {
  return print(dialect, [dialect.relay.release(names, ids, owner)], style)
}

export function renderStatements(statements: PrintedStatement[]): string {
  return (
    statements
      .map((s) => (s.params && s.params.length ? `${s.sql}\n-- params: ${JSON.stringify(s.params)}` : s.sql))
      .join('\n') + '\n'
  )
}
