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

/**
 * The transaction lease's statements (relay leaseBy 'transaction'), as its two scripts run
 * them: open, bound the idle time, lock the batch; then, once published, the mark (of
 * options.mark's ids, or placeholders), the retries if any, and COMMIT. Undefined on a dialect
 * without it.
 */
export function transactionClaimSql(dialect: Dialect, names: TableNames, options: ClaimOptions, style: SqlStyle): PrintedStatement[] | undefined {
  const part = dialect.relay.transactionLease
  if (!part) return undefined
  const {mark, ...claim} = options
  const printed = (statements: Sql[]) => statements.map((s) => ({sql: dialect.render.inline(s) + ';'}))
  const run = style === 'inline' ? printed : (statements: Sql[]) => print(dialect, statements, style)
  const ids = mark?.ids ?? ['<id 1>', '<id 2>']
  return [
    ...run([...part.begin(options.leaseMs), part.claim(names, claim)]),
    {sql: '-- publish the rows; then, in the same transaction, mark the published ones (a failed one gets a retry UPDATE: attempts + 1, backoff in lease_until) and commit:'},
    ...run([part.mark(names, ids), part.commit]),
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
