// mysql: RANGE COLUMNS (created_at) partitions named by their label, and a MAXVALUE partition
// `pmax` that catches what lies past the last range. A range has only its upper bound in the
// catalog; the first one also takes everything before it.
import type {PartitioningPart, PartitionRange, TableNames} from '../dialect.js'
import {raw, sql} from '../sql.js'
import {retention} from './retention.js'
import {datetime, quoteIdent, table} from './render.js'

export const CATCH_ALL = 'pmax'

const bound = (range: PartitionRange) => `PARTITION ${quoteIdent(range.label)} VALUES LESS THAN ('${datetime(range.to).slice(0, 19)}')`
const catchAll = `PARTITION ${quoteIdent(CATCH_ALL)} VALUES LESS THAN (MAXVALUE)`

/** the PARTITION BY clause of CREATE TABLE for the first ranges */
export function partitionClause(ranges: PartitionRange[]): string {
  return `\nPARTITION BY RANGE COLUMNS (created_at) (\n${[...ranges.map(bound), catchAll].map((p) => `  ${p}`).join(',\n')}\n)`
}

export const partitioning: PartitioningPart = {
  primaryKey: '(id, created_at)',
  retention,
  partitionName: (_names, label) => label,
  catchAllName: 'MAXVALUE partition',
  list: (names: TableNames) => sql`SELECT name, LAG(range_to) OVER (ORDER BY pos) AS range_from, range_to, catch_all, size_bytes FROM (
  SELECT partition_name AS name, partition_ordinal_position AS pos,
    CASE WHEN partition_description = 'MAXVALUE' THEN NULL ELSE CAST(TRIM(BOTH '''' FROM partition_description) AS DATETIME(6)) END AS range_to,
    CASE WHEN partition_description = 'MAXVALUE' THEN 1 ELSE 0 END AS catch_all,
    data_length + index_length AS size_bytes
  FROM information_schema.partitions
  WHERE table_schema = COALESCE(${names.schema ?? null}, DATABASE()) AND table_name = ${names.outbox} AND partition_name IS NOT NULL
) p ORDER BY pos`,
  stats: (names, partition) =>
    sql`SELECT COUNT(*) AS row_count, MIN(CASE WHEN published_at IS NULL THEN created_at END) AS oldest_unpublished FROM ${raw(table(names, 'outbox'))} PARTITION (${raw(quoteIdent(partition))})`,
  catchAllRows: (names, fallback, range) =>
    sql`SELECT COUNT(*) AS n FROM ${raw(table(names, 'outbox'))} PARTITION (${raw(quoteIdent(fallback))}) WHERE created_at >= ${range.from} AND created_at < ${range.to}`,
  // splitting the MAXVALUE partition moves its rows into the new ranges, whether it holds any or not
  add: (names, fallback, ranges) => [
    sql`ALTER TABLE ${raw(table(names, 'outbox'))} REORGANIZE PARTITION ${raw(quoteIdent(fallback))} INTO (${raw([...ranges.map(bound), catchAll].join(', '))})`,
  ],
  migration(names, create) {
    const fresh = `${names.outbox}_partitioned`
    const q = quoteIdent
    const rename = (from: string, to: string) => `${table({...names, outbox: from}, 'outbox')} TO ${table({...names, outbox: to}, 'outbox')}`
    return [
      '-- with producers and relays stopped (MySQL commits each DDL statement on its own):',
      ...create.map((statement) => statement.replace(table(names, 'outbox'), table({...names, outbox: fresh}, 'outbox'))),
      `INSERT INTO ${table({...names, outbox: fresh}, 'outbox')} SELECT * FROM ${table(names, 'outbox')};`,
      `RENAME TABLE ${rename(names.outbox, `${names.outbox}_unpartitioned`)}, ${rename(fresh, names.outbox)};`,
      `-- then: outbox partitions --ensure 14d, and DROP TABLE ${q(`${names.outbox}_unpartitioned`)} once you no longer need it`,
    ]
  },
}
