// PartitioningPart: an outbox table split by created_at into RANGE partitions (a day, a week or
// a month each) with a catch-all for rows past the last one, so an insert never fails for want
// of a partition. src/schema/partition-ranges.ts lays the ranges out; src/ops/partitions.ts
// lists and adds them. Every instant is UTC.
import type {TableNames} from './dialect.js'
import type {RetentionPart} from './retention.js'
import type {Sql} from './sql.js'

export type PartitionInterval = 'day' | 'week' | 'month'

/** One range partition: created_at in [from, to), named by the dialect from `label` (e.g. p20261205). */
export interface PartitionRange {
  label: string
  from: Date
  to: Date
}

export interface PartitioningPart {
  /**
   * The primary key of a partitioned outbox: the partition key must be part of it on both
   * servers, so it is (id, created_at); id comes first, so an id lookup (failed show, replay
   * --ids, the relay's mark) is a key prefix in each partition.
   */
  readonly primaryKey: string
  /** the partition a range's label names (PostgreSQL: a table <outbox>_<label>; MySQL: the label) */
  partitionName(names: TableNames, label: string): string
  /** what the catch-all is called in this database's words (`DEFAULT partition`, `MAXVALUE partition`) */
  readonly catchAllName: string
  /**
   * One row per partition of the outbox, in range order, the catch-all last: {name, range_from,
   * range_to (NULL on the catch-all; range_from NULL where the server keeps no lower bound),
   * catch_all (1/0), size_bytes}. No rows: the table is not partitioned (or does not exist).
   * `sizes` false: size_bytes NULL where measuring costs (PostgreSQL stats every partition's
   * files; status reads only where the last range ends)
   */
  list(names: TableNames, sizes?: boolean): Sql
  /**
   * One row per partition, {version}: text that changes whenever that partition's list() row
   * may (PostgreSQL: its pg_class row's oid and xmin; a rename, ATTACH or DETACH writes a new
   * row version), which list() returns as `version` too. Status reads this, not the bounds
   * (deparsing them costs about 25 us a partition), while the versions stay those it last read
   * the layout at. Undefined: list() on every read.
   */
  versions?(names: TableNames): Sql
  /** {row_count, oldest_unpublished (created_at of the oldest unpublished row)} of one partition by the name list() gave: a full count */
  stats(names: TableNames, partition: string): Sql
  /** {n}: the catch-all's rows whose created_at falls in the range */
  catchAllRows(names: TableNames, catchAll: string, range: PartitionRange): Sql
  /**
   * The statements that add range partitions after the last one, run in one transaction under
   * the init lock. `catchAllHasRows`: the catch-all holds rows in one of the ranges, which
   * PostgreSQL cannot split in place (pgmq#583): it detaches the DEFAULT partition, creates
   * the ranges, moves those rows and attaches it again. MySQL reorganises the MAXVALUE
   * partition, which moves them either way.
   */
  add(names: TableNames, catchAll: string, ranges: PartitionRange[], catchAllHasRows: boolean): Sql[]
  /**
   * The steps that turn an existing unpartitioned outbox into a partitioned one (new table,
   * copy, swap), as SQL comments and statements; `create` is init's DDL for the new table.
   */
  migration(names: TableNames, create: string[]): string[]
  /** how `outbox archive` takes whole partitions out and drops them (dialects/retention.ts) */
  readonly retention: RetentionPart
}
