// `outbox partitions --ensure 14d`: adds the range partitions missing from the last one up to
// now + ahead, under the named lock `init --apply` takes, so every replica of a deploy may run
// it at once: one adds them, the others find them there. Rows already in the catch-all for
// a range being added move into it in the same transaction (pgmq#583).
import {raw, sql, type PartitionRange, type TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {runUnderLock} from '../db/lock.js'
import {initLockKey} from '../schema/init.js'
import {rangesUntil} from '../schema/partition-ranges.js'
import {partitioningOf, requireLayout} from './partitions.js'
import {num} from './query.js'

export interface EnsureOptions {
  /** partitions must reach past now + aheadMs */
  aheadMs: number
  /** plan only: report what would be added, change nothing */
  dryRun?: boolean
}

export interface EnsureResult {
  table: string
  dryRun: boolean
  /** the database clock when the plan was made (ISO-8601) */
  at: string
  /** the ranges added (or, with dryRun, to add), in order */
  added: {name: string; from: string; to: string}[]
  /** rows moved (or to move) out of the catch-all into the added ranges */
  movedRows: number
  /** where the last range ends now (ISO-8601) */
  lastEndsAt: string
}

export async function ensurePartitions(db: Db, names: TableNames, options: EnsureOptions): Promise<EnsureResult> {
  const partitioning = partitioningOf(db.dialect)
  const lock = {key: initLockKey(db.dialect, names), waitSeconds: 60, busy: 'another outbox init or partitions --ensure on these tables'}
  return runUnderLock(db, lock, async (tx) => {
    const [clock] = await tx.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`)
    const now = db.dialect.render.parseTime(clock.now) as Date
    // read under the lock: a replica that waited finds the ranges the first one added
    const layout = await requireLayout(tx, db.dialect, names)
    const catchAll = layout.partitions.find((p) => p.catchAll)
    const ranges = rangesUntil(new Date(layout.lastEndsAt), new Date(now.getTime() + options.aheadMs), layout.interval)
    const movedRows = ranges.length > 0 && catchAll ? await rowsIn(tx, catchAll.name, ranges) : 0
    if (ranges.length > 0 && !options.dryRun) {
      if (!catchAll) throw new Error(`the outbox table ${names.outbox} has no ${partitioning.catchAllName}`)
      for (const statement of partitioning.add(names, catchAll.name, ranges, movedRows > 0)) await tx.execute(statement)
    }
    const added = ranges.map((r) => ({name: partitioning.partitionName(names, r.label), from: r.from.toISOString(), to: r.to.toISOString()}))
    const lastEndsAt = ranges.length > 0 && !options.dryRun ? ranges.at(-1)!.to.toISOString() : layout.lastEndsAt
    return {table: names.outbox, dryRun: Boolean(options.dryRun), at: now.toISOString(), added, movedRows, lastEndsAt}
  })

  async function rowsIn(tx: Pick<Db, 'query'>, catchAll: string, ranges: PartitionRange[]): Promise<number> {
    const span = {label: 'all', from: ranges[0].from, to: ranges.at(-1)!.to}
    const [row] = await tx.query(partitioning.catchAllRows(names, catchAll, span))
    return num(row.n)
  }
}
