// `outbox archive` on a partitioned outbox: a range partition that ends at or before the cutoff
// and whose every row is archivable (published, not failed, published before the cutoff of
// --min-published-age) leaves the outbox whole and is dropped, or copied into the archive and
// dropped, instead of being deleted row by row. A partition holding any other row stays, named
// with why; its archivable rows, those of partly eligible ranges and of the catch-all are the
// batches' (archive.ts). The catch-all is never taken out.
//
// Every event stays in exactly one place: a partition is marked (a comment naming the mode), taken
// out in one atomic statement (DETACH; MySQL: EXCHANGE with a staging table), its rows checked
// again where nothing else reaches them, then copied and dropped in one transaction. A run killed
// between these steps leaves a marked table, which the next run finds (dialect.retention.retired)
// and finishes first.
import {sql} from 'kysely'
import {parseRetiredComment, type PartitionRange, type RetentionPart, type RetireMode, type Sql} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'
import {failpoint} from '../core/failpoints.js'
import {runUnderLock} from '../db/lock.js'
import {initLockKey} from '../schema/init.js'
import {rangeFrom} from '../schema/partition-ranges.js'
import {replacingOlder} from './archive-move.js'
import {ALL_COLUMNS} from './events.js'
import {readLayout, type PartitionLayout} from './partitions.js'
import {num, type OpsContext} from './query.js'
import type {Queryable} from '../db/index.js'
import {exec} from './statements.js'
import {countBy} from './tally.js'

/** A range partition taken out (or to take out) whole. */
export interface PartitionSpan {
  name: string
  /** ISO-8601; null where the server keeps no lower bound (MySQL's first range) */
  from: string | null
  to: string
  rows: number
}

/** A partition that ended before the cutoff but holds rows that must stay: never dropped. */
export interface HeldPartition extends PartitionSpan {
  unpublished: number
  failed: number
  /** published, but not before the --min-published-age cutoff */
  recentlyPublished: number
  /** e.g. "holds 3 unpublished, 1 failed" */
  reason: string
}

/** A partition an earlier run took out and did not drop (killed in between): this run finishes it first. */
export interface UnfinishedPartition {
  /** the table its rows sit in (PostgreSQL: the detached partition; MySQL: the staging table) */
  table: string
  partition: string
  /** what the earlier run was doing, which this run finishes */
  mode: RetireMode
  /** detached; pending (PostgreSQL: DETACH ... CONCURRENTLY interrupted); attached (marked, never taken out: only unmarked) */
  state: 'detached' | 'pending' | 'attached'
  rows: number
}

/** How partitions leave the outbox on this server, and why so. */
interface Detaching {
  /** 'detach-concurrently', 'detach' (PostgreSQL with a DEFAULT partition), 'exchange' (MySQL/MariaDB) */
  detach: 'detach-concurrently' | 'detach' | 'exchange'
  detachWhy: string
}

export interface PartitionRetentionPlan extends Detaching {
  /** partitions a run takes out whole: dropped (--delete) or moved to the archive */
  whole: PartitionSpan[]
  held: HeldPartition[]
  unfinished: UnfinishedPartition[]
  /** of wouldArchive, the rows the batches take (held, partly eligible and catch-all partitions) */
  batchedRows: number
}

export interface PartitionRetentionResult extends Detaching {
  /** partitions taken out whole and dropped (after their rows were copied, when moving) */
  retired: PartitionSpan[]
  /** partitions an earlier run left taken out, finished by this one */
  finished: UnfinishedPartition[]
  held: HeldPartition[]
  /** taken out, then found holding rows that must stay (changed meanwhile): put back, left to the batches */
  restored: string[]
  /**
   * MySQL: emptied partitions whose rows were taken, found holding rows written into their range
   * since (a replay, a late writer): not dropped, those rows stay in the outbox for the next run
   */
  refilled: string[]
  /** of archived, the rows the batches moved or deleted */
  batchedRows: number
}

/** What retention works with: the outbox's layout and the dialect's part; undefined where it is not partitioned as init makes it. */
export interface Retention extends OpsContext {
  part: RetentionPart
  layout: PartitionLayout
  publishedBefore: Date
}

export async function retentionOf(ctx: OpsContext, publishedBefore: Date): Promise<Retention | undefined> {
  const part = ctx.db.dialect.ddl.partitioning?.retention
  if (!part) return undefined
  // a layout outbox did not make is archived by the batches, as an unpartitioned table
  const layout = await readLayout(ctx.db, ctx.db.dialect, ctx.names).catch((error) => {
    if (error instanceof UsageError) return undefined
    throw error
  })
  return layout && {...ctx, part, layout, publishedBefore}
}

function detaching(r: Retention): Detaching {
  const way = r.part.detachWay(r.layout.partitions.some((p) => p.catchAll))
  return {detach: way.kind, detachWhy: way.why}
}

/** The ranges that ended at or before `before`, judged whole or held (one count of each). */
export async function judgePartitions(r: Retention, before: Date, unfinished: UnfinishedPartition[] = []): Promise<{whole: PartitionSpan[]; held: HeldPartition[]}> {
  const whole: PartitionSpan[] = []
  const held: HeldPartition[] = []
  // a DETACH ... CONCURRENTLY left pending is still listed: it is the unfinished one's
  const taken = new Set(unfinished.filter((u) => u.state !== 'attached').map((u) => u.partition))
  for (const p of r.layout.partitions) {
    if (p.catchAll || !p.to || new Date(p.to).getTime() > before.getTime() || taken.has(p.name)) continue
    const [row] = await r.db.query(r.part.check(r.names, p.name, r.publishedBefore))
    const span = {name: p.name, from: p.from, to: p.to, rows: num(row.row_count)}
    const counts = {unpublished: num(row.unpublished), failed: num(row.failed), recentlyPublished: num(row.recent)}
    if (counts.unpublished + counts.failed + counts.recentlyPublished === 0) whole.push(span)
    else held.push({...span, ...counts, reason: heldReason(counts, r.publishedBefore)})
  }
  return {whole, held}
}

function heldReason(c: {unpublished: number; failed: number; recentlyPublished: number}, publishedBefore: Date): string {
  const parts = [c.unpublished && `${c.unpublished} unpublished`, c.failed && `${c.failed} failed`, c.recentlyPublished && `${c.recentlyPublished} published after ${publishedBefore.toISOString()}`]
  return `holds ${parts.filter(Boolean).join(', ')}`
}

/** The tables earlier runs took out and left, with their rows per type. */
export async function unfinishedPartitions(r: Retention): Promise<{unfinished: UnfinishedPartition[]; byType: Record<string, number>}> {
  const unfinished: UnfinishedPartition[] = []
  const byType: Record<string, number> = {}
  for (const row of await r.db.query(r.part.retired(r.names))) {
    const marked = parseRetiredComment(String(row.comment))
    if (!marked) continue
    const state = String(row.state) as UnfinishedPartition['state']
    let rows = 0
    if (state !== 'attached') {
      for (const t of await r.db.query(r.part.retiredRows(r.names, String(row.name), r.publishedBefore))) {
        rows += num(t.n)
        countBy(byType, String(t.event_type), num(t.n))
      }
    }
    unfinished.push({table: String(row.name), partition: marked.partition, mode: marked.mode, state, rows})
  }
  return {unfinished, byType}
}

export async function planPartitions(r: Retention, before: Date): Promise<Omit<PartitionRetentionPlan, 'batchedRows'> & {unfinishedByType: Record<string, number>}> {
  const {unfinished, byType} = await unfinishedPartitions(r)
  return {...detaching(r), ...(await judgePartitions(r, before, unfinished)), unfinished, unfinishedByType: byType}
}

export interface RetireOptions {
  mode: RetireMode
  before: Date
  byType: Record<string, number>
  signal?: AbortSignal
  /** after each partition finished: the rows it took */
  onRetired?: (rows: number) => void
}

/**
 * Finishes what earlier runs left, then takes out every whole partition, under the lock init and
 * partitions --ensure take (they change the same table's partitions).
 */
export async function retirePartitions(r: Retention, options: RetireOptions): Promise<{result: Omit<PartitionRetentionResult, 'batchedRows'>; rows: number; interrupted: boolean}> {
  const lock = {key: initLockKey(r.db.dialect, r.names), waitSeconds: 60, busy: 'another outbox init, partitions --ensure or archive on these tables'}
  // FINALIZE waits for every older transaction, the lock's own among them: it runs before the lock
  // (finishing a detach a run already decided; the partition is out of the plans meanwhile)
  for (const u of (await unfinishedPartitions(r)).unfinished) {
    if (u.state === 'pending') await r.db.execute(r.part.finalize!(r.names, u.partition))
  }
  return runUnderLock(r.db, lock, async () => {
    const result: Omit<PartitionRetentionResult, 'batchedRows'> = {...detaching(r), retired: [], finished: [], held: [], restored: [], refilled: []}
    let rows = 0
    const stopped = () => Boolean(options.signal?.aborted)
    const took = (n: number) => {
      rows += n
      options.onRetired?.(n)
    }
    for (const u of (await unfinishedPartitions(r)).unfinished) {
      if (stopped()) return {result, rows, interrupted: true}
      if (u.state === 'attached') {
        if (r.part.unmark) await r.db.execute(r.part.unmark(r.names, u.partition))
        continue
      }
      const done = await finish(r, u.table, u.partition, u.mode, options.byType, false)
      if (done === 'restored') result.restored.push(u.partition)
      else {
        result.finished.push({...u, rows: done.rows})
        if (done.landed > 0) result.refilled.push(u.partition)
        took(done.rows)
      }
    }
    // judged under the lock, after the unfinished ones are back or gone
    const layout = await readLayout(r.db, r.db.dialect, r.names)
    const {whole, held} = await judgePartitions({...r, layout: layout ?? r.layout}, options.before)
    result.held = held
    const way = r.part.detachWay(r.layout.partitions.some((p) => p.catchAll))
    for (const p of whole) {
      if (stopped()) return {result, rows, interrupted: true}
      for (const statement of r.part.detach(r.names, p.name, options.mode, way)) await r.db.execute(statement)
      failpoint('archive.partition-detached')
      const done = await finish(r, r.part.retiredTable(r.names, p.name), p.name, options.mode, options.byType, true)
      if (done === 'restored') result.restored.push(p.name)
      else {
        result.retired.push({...p, rows: done.rows})
        if (done.landed > 0) result.refilled.push(p.name)
        took(done.rows)
      }
    }
    return {result, rows, interrupted: false}
  })
}

/**
 * A taken-out partition's rows checked again where nothing else reaches them, then copied into
 * the archive (moving) and dropped, in one transaction (MySQL commits the copy as the table
 * lock before the drop starts; a rerun copies again over the same ids, so the archive still holds
 * each event once). Rows that must stay (changed between the check and the detach) send the
 * partition back whole. Rows written into the range since it was taken out stay in the outbox
 * either way (`landed`: MySQL keeps the emptied partition for them).
 */
async function finish(r: Retention, table: string, partition: string, mode: RetireMode, byType: Record<string, number>, fresh: boolean): Promise<{rows: number; landed: number} | 'restored'> {
  const {db, names, part} = r
  const counted = await db.transaction(async (tx) => {
    const types = await tx.query(part.retiredRows(names, table, r.publishedBefore))
    const rows = types.reduce((n, t) => n + num(t.n), 0)
    if (types.some((t) => num(t.kept) > 0)) return 'restore' as const
    // found empty after a crash: a staging table whose exchange never ran, or a detached partition with nothing in it
    if (rows === 0 && !fresh) return 'discard' as const
    if (mode === 'move' && rows > 0) {
      const copied = await exec(tx, copyStatement(r, table))
      if (copied < rows) throw new Error(`copied ${copied} of ${rows} rows of ${table} into the archive; rolled back, rerun`)
      failpoint('archive.partition-copied')
    }
    const landed = await guarded(r, tx, table, partition, (n) => {
      failpoint('archive.partition-drop') // MySQL: the lock committed the copy
      return part.drop(names, table, partition, n)
    })
    for (const t of types) countBy(byType, String(t.event_type), num(t.n))
    return {rows, landed}
  })
  if (counted === 'discard') {
    await db.execute(part.discard(names, table))
    return {rows: 0, landed: 0}
  }
  if (counted !== 'restore') return counted
  const catchAll = r.layout.partitions.find((p) => p.catchAll)?.name
  await db.transaction((tx) => guarded(r, tx, table, partition, (n) => part.restore(names, table, partition, rangeOf(r, partition), n, catchAll)))
  return 'restored'
}

/**
 * Counts the rows written into the partition's range since it was taken out, then runs what
 * drops or restores it knowing them, under the dialect's guard where it has one (MySQL: table
 * locks, released whatever happens: the connection goes back to the pool).
 */
async function guarded(r: Retention, tx: Queryable, table: string, partition: string, statements: (landed: number) => Sql[]): Promise<number> {
  const {part, names} = r
  let landed = 0
  try {
    // inside: a lock that waited too long still runs unlock, which puts the session back
    for (const statement of part.guard?.lock(names, table) ?? []) await tx.execute(statement)
    const catchAll = r.layout.partitions.find((p) => p.catchAll)?.name
    const count = part.landed(names, partition, rangeOf(r, partition), catchAll)
    landed = count ? num((await tx.query(count))[0]?.n) : 0
    for (const statement of statements(landed)) await tx.execute(statement)
  } catch (error) {
    for (const statement of part.guard?.unlock ?? []) await tx.execute(statement).catch(() => undefined)
    throw error
  }
  for (const statement of part.guard?.unlock ?? []) await tx.execute(statement)
  return landed
}

/** INSERT INTO archive SELECT ... FROM the taken-out table; an id the archive holds already takes this copy (a rerun after MySQL committed the copy). */
function copyStatement({k, names, db}: Retention, table: string) {
  const rows = k.selectFrom(table).select([...ALL_COLUMNS, sql.raw(db.dialect.render.now).as('archived_at')])
  return replacingOlder(db.dialect.batches.plan.upsert, k.insertInto(names.archive).columns([...ALL_COLUMNS, 'archived_at']).expression(rows))
}

/** A partition's range from its label (p20261205) and the layout's interval. */
function rangeOf(r: Retention, partition: string): PartitionRange {
  const m = /p(\d{4})(\d\d)(\d\d)$/.exec(partition)
  if (!m) throw new Error(`cannot tell the range of partition ${partition} from its name`)
  return rangeFrom(new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))), r.layout.interval)
}
