// DdlPart: the tables and indexes `outbox init` creates, and how to see which exist. The
// columns come from src/schema/columns.ts; a dialect gives each one its type.
import type {TableNames} from './dialect.js'
import type {PartitioningPart, PartitionRange} from './partitions.js'
import type {Sql} from './sql.js'

export interface DdlOptions {
  inbox: boolean
  archive: boolean
  /**
   * The outbox's first range partitions (src/schema/partition-ranges.ts), which make it a
   * partitioned table with a catch-all partition: only where `partitioning` is defined.
   */
  partitions?: PartitionRange[]
}

export type DdlObjectKind = 'schema' | 'table' | 'partition' | 'index'

/** One idempotent DDL statement and the object it creates (so `init --apply` can report). */
export interface DdlStatement {
  kind: DdlObjectKind
  name: string
  /** the table an index belongs to */
  table?: string
  sql: string
  /**
   * An index its table's CREATE TABLE makes already (MySQL, which has no CREATE INDEX IF NOT
   * EXISTS): applied only to a table that exists without it, never printed in the script.
   */
  repairOnly?: boolean
}

export interface DdlPart {
  /**
   * Every statement `outbox init` runs or prints, in order: schema, then each table followed by
   * its indexes. Each one is idempotent (IF NOT EXISTS, or repairOnly).
   */
  statements(names: TableNames, options: DdlOptions): DdlStatement[]
  /** a query returning one row per column of the three tables that exist: {table_name, column_name} */
  existingColumns(names: TableNames): Sql
  /** a query returning one row per existing object: {kind, name}, kind as in DdlStatement */
  existingObjects(names: TableNames): Sql
  /**
   * The outbox partitioned by created_at (dialects/partitions.ts): PostgreSQL's declarative
   * RANGE partitions and a DEFAULT partition, MySQL's RANGE COLUMNS and a MAXVALUE partition.
   * Undefined: this database cannot (SQLite), and `init --partition-by` refuses.
   */
  readonly partitioning?: PartitioningPart
}
