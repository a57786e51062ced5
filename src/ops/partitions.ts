// `outbox partitions`: the partitions of an outbox partitioned by created_at (init
// --partition-by), each with its range, rows, size and oldest unpublished event, and when the
// last range ends: past that, events land in the catch-all partition.
import type {Dialect, PartitioningPart, PartitionInterval, TableNames} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'
import type {Db, Queryable} from '../db/index.js'
import {intervalOf} from '../schema/partition-ranges.js'
import {statusLayout} from './layout-cache.js'
import {num} from './query.js'

/** `status` warns when the last range ends sooner than this: time for `partitions --ensure` to have run. */
export const PARTITIONS_ENDING_MS = 3 * 86_400_000

export interface PartitionBounds {
  name: string
  /** ISO-8601; null where the server keeps no lower bound (MySQL's first range, the catch-all) */
  from: string | null
  /** ISO-8601; null on the catch-all */
  to: string | null
  /** the DEFAULT (PostgreSQL) or MAXVALUE (MySQL) partition: rows past the last range */
  catchAll: boolean
  sizeBytes: number
}

export interface PartitionInfo extends PartitionBounds {
  rows: number
  /** created_at of the oldest unpublished event (failed included), ISO-8601, or null */
  oldestUnpublished: string | null
}

export interface PartitionLayout {
  table: string
  interval: PartitionInterval
  partitions: PartitionBounds[]
  /** where the last range ends (ISO-8601) */
  lastEndsAt: string
}

export interface PartitionsReport extends Omit<PartitionLayout, 'partitions'> {
  partitions: PartitionInfo[]
}

export function partitioningOf(dialect: Dialect): PartitioningPart {
  const partitioning = dialect.ddl.partitioning
  if (!partitioning) throw new UsageError(`${dialect.displayName} cannot partition the outbox`, 'outbox partitions needs PostgreSQL or MySQL/MariaDB')
  return partitioning
}

/** The partitions in range order, the catch-all last; undefined when the table is not partitioned. */
export async function readLayout(q: Queryable, dialect: Dialect, names: TableNames, sizes = true): Promise<PartitionLayout | undefined> {
  // prepared where reads are (status reads it on every report): planned once per connection
  const rows = await q.query(partitioningOf(dialect).list(names, sizes), {prepare: dialect.batches.prepareReads})
  return layoutOf(rows, dialect, names)
}

/** The layout list()'s rows describe; undefined when there are none. */
export function layoutOf(rows: Record<string, unknown>[], dialect: Dialect, names: TableNames): PartitionLayout | undefined {
  if (rows.length === 0) return undefined
  const time = (value: unknown) => (value == null ? null : (dialect.render.parseTime(value) as Date).toISOString())
  const partitions = rows.map((r) => ({name: String(r.name), from: time(r.range_from), to: time(r.range_to), catchAll: num(r.catch_all) === 1, sizeBytes: num(r.size_bytes)}))
  const ranges = partitions.filter((p) => !p.catchAll)
  const last = ranges.at(-1)
  const spanned = [...ranges].reverse().find((p) => p.from !== null)
  const interval = spanned && intervalOf(new Date(spanned.from!), new Date(spanned.to!))
  if (!last || !interval) {
    throw new UsageError(`the outbox table ${names.outbox} is partitioned, but not by day, week or month ranges as outbox init lays them out`, 'outbox partitions manages only those')
  }
  return {table: names.outbox, interval, partitions, lastEndsAt: last.to!}
}

/** The layout, or one line saying the table is not partitioned. */
export async function requireLayout(q: Queryable, dialect: Dialect, names: TableNames): Promise<PartitionLayout> {
  const layout = await readLayout(q, dialect, names)
  if (!layout) throw new UsageError(`the outbox table ${names.outbox} is not partitioned (or does not exist)`, 'outbox init --partition-by day|week|month creates a partitioned one')
  return layout
}

/** Every partition with its rows and oldest unpublished event: one count per partition. */
export async function listPartitions(db: Db, names: TableNames): Promise<PartitionsReport> {
  const layout = await requireLayout(db, db.dialect, names)
  const partitioning = partitioningOf(db.dialect)
  const partitions: PartitionInfo[] = []
  for (const p of layout.partitions) {
    const [stats] = await db.query(partitioning.stats(names, p.name))
    const oldest = stats.oldest_unpublished == null ? null : (db.dialect.render.parseTime(stats.oldest_unpublished) as Date).toISOString()
    partitions.push({...p, rows: num(stats.row_count), oldestUnpublished: oldest})
  }
  return {...layout, partitions}
}

/** Where a partitioned outbox's last range ends, for `status`; `warning` when it is within PARTITIONS_ENDING_MS of now. */
export interface PartitionsAhead {
  lastEndsAt: string
  secondsLeft: number
  warning: string | null
}

/** Undefined where the table is not partitioned (or the dialect cannot be): nothing to warn about. */
export async function partitionsAhead(db: Db, names: TableNames, now: Date): Promise<PartitionsAhead | undefined> {
  if (!db.dialect.ddl.partitioning) return undefined
  const layout = await statusLayout(db, names)
  if (!layout) return undefined
  const leftMs = new Date(layout.lastEndsAt).getTime() - now.getTime()
  const warning =
    leftMs < PARTITIONS_ENDING_MS
      ? `the last partition of ${names.outbox} ends ${leftMs <= 0 ? 'in the past' : 'within 3 days'} (${layout.lastEndsAt}): newer events land in the catch-all partition. Run outbox partitions --ensure 14d (daily, from cron or every replica's start-up)`
      : null
  return {lastEndsAt: layout.lastEndsAt, secondsLeft: Math.round(leftMs / 1000), warning}
}
