// Keyset bounds over (created_at, id): where a batch starts (after the cursor) and ends (at or
// before its last row), written as the plan's keysetBounds says, always with a created_at term
// of its own so that a created_at index serves them on every database.
import {sql, type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool} from 'kysely'
import type {BatchPlan} from '../../dialects/batches.js'
import type {BatchSlot} from './templates.js'

export type Where = (eb: ExpressionBuilder<any, any>) => Expression<SqlBool>[]

export type KeysetBounds = BatchPlan['keysetBounds']

/** A (created_at, id) position: values, per-batch markers (a Template binds them), or subqueries. */
export interface Keyset {
  at: string | BatchSlot | RawBuilder<unknown>
  id: string | BatchSlot | RawBuilder<unknown>
}

/** After the cursor in (created_at, id) order; nothing before the first batch. */
export function after(cursor: Keyset | undefined, bounds: KeysetBounds): Where {
  if (!cursor) return () => []
  if (bounds === 'row-values') return (eb) => [eb('created_at', '>=', cursor.at), sql<SqlBool>`(created_at, id) > (${cursor.at}, ${cursor.id})`]
  return (eb) => [eb('created_at', '>=', cursor.at), eb.or([eb('created_at', '>', cursor.at), eb('id', '>', cursor.id)])]
}

/** At or before a row in (created_at, id) order: the upper end of a batch's range. */
export function atOrBefore(last: Keyset, bounds: KeysetBounds): Where {
  if (bounds === 'row-values') return (eb) => [eb('created_at', '<=', last.at), sql<SqlBool>`(created_at, id) <= (${last.at}, ${last.id})`]
  return (eb) => [eb('created_at', '<=', last.at), eb.or([eb('created_at', '<', last.at), eb('id', '<=', last.id)])]
}

/** The (created_at, id) span from a batch's start position through its last row. */
export function rangeOf(position: Where, last: Keyset, bounds: KeysetBounds): Where {
  const through = atOrBefore(last, bounds)
  return (eb) => [...position(eb), ...through(eb)]
}
