// postgres: rows the DEFAULT partition holds in a range that gets a partition of its own. A range
// cannot be created or attached while the DEFAULT partition holds rows in it (pgmq#583): the
// DEFAULT partition is taken out, the range made, those rows moved in through the parent, and
// the DEFAULT partition put back, in one transaction.
import type {PartitionRange, TableNames} from '../dialect.js'
import {raw, sql, type Sql} from '../sql.js'
import {table} from './render.js'

const partitionTable = (names: TableNames, partition: string) => raw(table({...names, outbox: partition}, 'outbox'))

/** {n}: the catch-all's rows whose created_at falls in [from, to) */
export const catchAllRows = (names: TableNames, catchAll: string, range: Pick<PartitionRange, 'from' | 'to'>): Sql =>
  sql`SELECT count(*) AS n FROM ${partitionTable(names, catchAll)} WHERE created_at >= ${range.from} AND created_at < ${range.to}`

/** `making` (the statements that create or attach the ranges in [from, to)) with the catch-all's rows there moved in */
export function throughCatchAll(names: TableNames, catchAll: string, range: Pick<PartitionRange, 'from' | 'to'>, making: Sql[]): Sql[] {
  const outbox = raw(table(names, 'outbox'))
  const fallback = partitionTable(names, catchAll)
  return [
    sql`ALTER TABLE ${outbox} DETACH PARTITION ${fallback}`,
    ...making,
    sql`WITH moved AS (DELETE FROM ${fallback} WHERE created_at >= ${range.from} AND created_at < ${range.to} RETURNING *) INSERT INTO ${outbox} SELECT * FROM moved`,
    sql`ALTER TABLE ${outbox} ATTACH PARTITION ${fallback} DEFAULT`,
  ]
}
