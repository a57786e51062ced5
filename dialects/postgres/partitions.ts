// postgres: declarative RANGE partitions on created_at and a DEFAULT partition, each a table
// named <outbox>_<label> (<outbox>_default), read back from pg_inherits.
import type {PartitioningPart, PartitionRange, TableNames} from '../dialect.js'
import {indexNames, quoteString} from '../shared.js'
import {raw, sql} from '../sql.js'
import {catchAllRows, throughCatchAll} from './catch-all.js'
import {retention} from './retention.js'
import {quoteIdent, table} from './render.js'

// High churn: the claim's lease UPDATE (columns in no index) is a HOT update only if its page has
// room for the new versions, and dead tuples pile up fast. At fillfactor 50 every row of a page
// the inserts filled has that room (a claimed batch is whole pages); at 80, ~30% had: the rest
// wrote 3 index entries each, and a backlog drained 1.2-1.5x slower (bench/results/peers-rowlease.md).
// A partitioned table takes no storage parameters: each partition carries them.
export const STORAGE = 'WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)'

/** a partition of the outbox, schema-qualified like it */
function partitionTable(names: TableNames, partition: string): string {
  return table({...names, outbox: partition}, 'outbox')
}

export function partitionName(names: TableNames, label: string): string {
  return `${names.outbox}_${label}`
}

export function defaultPartitionName(names: TableNames): string {
  return `${names.outbox}_default`
}

/** CREATE TABLE ... PARTITION OF for one range (IF NOT EXISTS: init's plan is idempotent) */
export function createRange(names: TableNames, range: PartitionRange, ifNotExists = true): string {
  const bounds = `FROM (${quoteString(range.from.toISOString())}) TO (${quoteString(range.to.toISOString())})`
  return `CREATE TABLE ${ifNotExists ? 'IF NOT EXISTS ' : ''}${partitionTable(names, partitionName(names, range.label))} PARTITION OF ${table(names, 'outbox')} FOR VALUES ${bounds} ${STORAGE};`
}

export function createDefault(names: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${partitionTable(names, defaultPartitionName(names))} PARTITION OF ${table(names, 'outbox')} DEFAULT ${STORAGE};`
}

// a partition's pg_class row as it stands: any change to its name or bounds writes a new xmin
const VERSION = "c.oid::text || ':' || c.xmin::text"

const noSemicolon = (text: string) => raw(text.replace(/;$/, ''))

export const partitioning: PartitioningPart = {
  primaryKey: '(id, created_at)',
  retention,
  partitionName,
  catchAllName: 'DEFAULT partition',
  // the bounds are read back from their text, which carries its UTC offset whatever the session's
  // TimeZone; deparsed once a partition (OFFSET 0 keeps the subquery from being inlined three times)
  list: (names, sizes = true) => sql`SELECT c.relname AS name,
  (regexp_match(b.bound, 'FROM \\(''([^'']*)''\\)'))[1]::timestamptz AS range_from,
  (regexp_match(b.bound, 'TO \\(''([^'']*)''\\)'))[1]::timestamptz AS range_to,
  CASE WHEN b.bound = 'DEFAULT' THEN 1 ELSE 0 END AS catch_all,
  ${raw(sizes ? 'pg_total_relation_size(c.oid)' : 'NULL')} AS size_bytes, ${raw(VERSION)} AS version
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
  LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound OFFSET 0) b
WHERE i.inhparent = to_regclass(${table(names, 'outbox')})
ORDER BY catch_all, range_from`,
  versions: (names) => sql`SELECT ${raw(VERSION)} AS version FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(${table(names, 'outbox')})`,
  stats: (names, partition) =>
    sql`SELECT count(*) AS row_count, min(created_at) FILTER (WHERE published_at IS NULL) AS oldest_unpublished FROM ${raw(partitionTable(names, partition))}`,
  catchAllRows,
  add(names, catchAll, ranges, catchAllHasRows) {
    const creates = ranges.map((range) => sql`${noSemicolon(createRange(names, range, false))}`)
    return catchAllHasRows ? throughCatchAll(names, catchAll, {from: ranges[0].from, to: ranges[ranges.length - 1].to}, creates) : creates
  },
  migration(names, create) {
    const old = `${names.outbox}_unpartitioned`
    const oldTable = table({...names, outbox: old}, 'outbox')
    const q = quoteIdent
    const schema = names.schema ? `${q(names.schema)}.` : ''
    const [now, then] = [indexNames(names), indexNames({...names, outbox: old})]
    const outboxIndexes = ['pending', 'createdAt', 'failed', 'published'] as const
    return [
      '-- with producers and relays stopped, in one transaction:',
      'BEGIN;',
      `ALTER TABLE ${table(names, 'outbox')} RENAME TO ${q(old)};`,
      `ALTER TABLE ${oldTable} RENAME CONSTRAINT ${q(`${names.outbox}_pkey`)} TO ${q(`${old}_pkey`)};`,
      // index names are the schema's: the new table's would find the old ones and make none
      ...outboxIndexes.map((ix) => `ALTER INDEX IF EXISTS ${schema}${q(now[ix])} RENAME TO ${q(then[ix])};`),
      ...create,
      `INSERT INTO ${table(names, 'outbox')} SELECT * FROM ${oldTable};`,
      'COMMIT;',
      `-- then: outbox partitions --ensure 14d, and DROP TABLE ${oldTable} once you no longer need it`,
    ]
  },
}
