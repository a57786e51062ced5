// Archive's change where a batch's rows were read first (summary-then-change plans, and every
// row-by-row batch): copy them into the archive table, then delete them, picked again through
// the batch's (created_at, id) range.
import {sql} from 'kysely'
import type {BatchPlan} from '../../dialects/batches.js'
import {failpoint} from '../core/failpoints.js'
import type {Queryable} from '../db/index.js'
import type {Where} from './batch-keyset.js'
import type {BatchRow} from './batch-rows.js'
import type {ChangeTarget, Reuse} from './batch-summarised.js'
import {expectBatch} from './batches.js'
import {ALL_COLUMNS} from './events.js'
import {num, type OpsContext} from './query.js'
import {exec, run, type Compilable} from './statements.js'
import {slot, type BatchValues, type SlotName} from './templates.js'

/** A batch whose rows this transaction holds by count (row locks, or a row-by-row batch). */
export interface Locked {
  /** how many: the copy and the delete must each take exactly these */
  rows: number
  /** the batch's last row, which must be gone after the delete (a Template binds slot.last_id instead) */
  lastId?: string
  /** the batch is an id range (the target reads it by id): the delete goes in id order */
  byId: boolean
}

export interface MoveBatch {
  target: ChangeTarget
  locked?: Locked
  /** a summarised batch's: its statements are Templates, bound per batch */
  reuse?: Reuse
  /** an id the archive holds already takes the newer copy (replacingOlder) */
  replacing: boolean
}

/**
 * A batch's rows copied into the archive (unless purging), picked again through the batch's
 * (created_at, id) range, then deleted. Every copied row is deleted or the batch rolls back:
 * never in both tables, never in neither.
 *
 * With a `locked` batch, the delete goes by range too, as `ORDER BY created_at, id LIMIT
 * <batch size>`: InnoDB's DELETE locks the index record after a range before it sees the range
 * has ended, so without the LIMIT it would wait on the next batch's first row whenever another
 * session holds it; with it, the scan stops at the batch's last row (and it is faster than by
 * id list: BENCHMARKS.md, figures behind the code's choices). The LIMIT could only pick a wrong row if one entered the
 * range after the copy; the range ends at the batch's last row, so that row would then be the
 * one left behind: it must be gone, or the batch rolls back.
 *
 * Where the batch is an id range (`byId`: a primary-key locator and ids that ascend in the
 * batch's order, as time-ordered ids such as our producer's UUIDv7 do), both statements also
 * say `id BETWEEN first AND last` and the delete goes `ORDER BY id`: the server reads the batch
 * in place, and the LIMIT still ends the scan on the batch's last row, which is now also its
 * largest id, so the same check holds.
 */
export async function moveRange(ctx: OpsContext, tx: Queryable, where: Where, range: Where, purge: boolean, batch: MoveBatch): Promise<number> {
  const {k, names, db} = ctx
  const {target, locked, reuse, replacing} = batch
  const picked = (eb: any) => eb.and([...target.within(eb), ...where(eb), ...range(eb)])
  const prepared = (shape: string, build: () => Compilable) => (reuse ? reuse(shape, build) : build())
  // a Template takes the batch's values as markers (forEachSummarisedBatch binds them)
  const value = <N extends SlotName>(name: N, v: BatchValues[N] | undefined) => (reuse ? slot[name] : v)
  const remove = () => {
    const deleting = k.deleteFrom(target.table).where(picked)
    if (!locked) return deleting
    return (locked.byId ? deleting.orderBy('id') : deleting.orderBy('created_at').orderBy('id')).limit(sql<number>`${value('batch_rows', locked.rows)}`)
  }
  const removeLocked = async (locked: Locked) => {
    const removed = expectBatch(await exec(tx, prepared('delete', remove)), locked.rows)
    const last = () => k.selectFrom(names.outbox).select(sql<number>`COUNT(*)`.as('n')).where('id', '=', value('last_id', locked.lastId))
    const [left] = await run(tx, prepared('left', last))
    if (num(left?.n) > 0) throw new Error('a row entered the batch\'s range while it was moved; it was rolled back, rerun')
    return removed
  }
  if (purge) return locked ? removeLocked(locked) : exec(tx, prepared('delete', remove))
  const copy = () => {
    const rows = k.selectFrom(target.table).select([...ALL_COLUMNS, sql.raw(db.dialect.render.now).as('archived_at')]).where(picked)
    const insert = k.insertInto(names.archive).columns([...ALL_COLUMNS, 'archived_at']).expression(rows)
    return replacing ? replacingOlder(db.dialect.batches.plan.upsert, insert) : insert
  }
  const counted = await exec(tx, prepared(replacing ? 'copy replacing' : 'copy', copy))
  // ON DUPLICATE KEY counts a row it updated twice: between rows and 2 x rows. Exact enough:
  // the delete below must take exactly the batch and leave no row of its range behind.
  const countsTwice = replacing && locked && db.dialect.batches.plan.upsert === 'on-duplicate-key'
  const copied = countsTwice && counted > locked.rows && counted <= 2 * locked.rows ? locked.rows : counted
  if (locked) expectBatch(copied, locked.rows)
  failpoint('archive.mid-batch')
  return locked ? removeLocked(locked) : expectBatch(await exec(tx, prepared('delete', remove)), copied)
}

/**
 * One id, one event (consumers dedupe on it): an id the archive holds already (archived, then
 * written again by a producer with its own ids, or brought back and archived again) takes the
 * newer copy instead of failing the batch on the archive's primary key, every rerun again.
 */
export function replacingOlder<T extends {onConflict: any; onDuplicateKeyUpdate: any}>(upsert: BatchPlan['upsert'], insert: T): T {
  const columns = [...ALL_COLUMNS.filter((c) => c !== 'id'), 'archived_at']
  switch (upsert) {
    case 'on-duplicate-key':
      return insert.onDuplicateKeyUpdate(Object.fromEntries(columns.map((c) => [c, sql`VALUES(${sql.ref(c)})`])))
    case 'on-conflict':
      return insert.onConflict((oc: any) => oc.column('id').doUpdateSet((eb: any) => Object.fromEntries(columns.map((c) => [c, eb.ref(`excluded.${c}`)]))))
  }
}

/** A row-by-row batch: its rows are held; where the plan's locator is the id and the ids follow the batch's order, it is read as an id range. */
export function lockedRows(ctx: OpsContext, plan: BatchPlan, rows: BatchRow[]): {target: ChangeTarget; locked: Locked} {
  const ids = rows.map((row) => String(row.id))
  const [first, last] = [ids[0], ids[ids.length - 1]]
  const byId = plan.kind === 'summary-then-change' && plan.locator?.kind === 'primary-key' && idsAscend(ids)
  const target = byId ? {table: ctx.names.outbox, within: ((eb) => [eb('id', '>=', first), eb('id', '<=', last)]) as Where} : {table: ctx.names.outbox, within: (() => []) as Where}
  return {target, locked: {rows: ids.length, lastId: last, byId}}
}

/**
 * The ids ascend in the batch's order (the column compares bytes: ascii_bin), as time-ordered
 * ids do. Smallest first and largest last is not enough: random ids do that by chance in small
 * batches, and the id range then runs over the table.
 */
function idsAscend(ids: string[]): boolean {
  return ids.every((id, i) => i === 0 || ids[i - 1] < id)
}
