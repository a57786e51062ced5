// Archive's one-statement batches (OneStatementPlan): each batch moved or deleted by one
// statement with data-modifying CTEs, no separate locking read.
import {sql, type SqlBool} from 'kysely'
import type {OneStatementPlan} from '../../dialects/batches.js'
import type {ExportColumns} from './archive-export.js'
import {replacingOlder} from './archive-move.js'
import type {Where} from './batch-keyset.js'
import {batchRead, inBatch, summarisedStatement} from './batch-one-statement.js'
import {ALL_COLUMNS} from './events.js'
import type {OpsContext} from './query.js'

/** Without an export file: the move summed up by the database into one row instead of returning every moved row. */
export function summarisedMove(ctx: OpsContext, plan: OneStatementPlan, where: Where, position: Where, size: number, purge: boolean, sample: number, replacing: boolean) {
  const {k, names, db} = ctx
  const batch = batchRead(ctx, where, position, size)
  const last = inBatch(plan)
  const picked = (eb: any) => eb.and([...where(eb), ...position(eb), ...last(eb)])
  const wanted = {sample, listed: 0}
  if (purge) {
    const changed = k.deleteFrom(names.outbox).where(picked).returning(['id', 'event_type', 'created_at'])
    return summarisedStatement(ctx, plan, batch, sql`changed AS (${changed})`, wanted)
  }
  const moved = k.deleteFrom(names.outbox).where(picked).returning([...ALL_COLUMNS])
  const changed = k
    .insertInto(names.archive)
    .columns([...ALL_COLUMNS, 'archived_at'])
    // raw: `moved` is declared in the raw WITH, where a --schema prefix must not reach it
    .expression(sql`SELECT ${sql.raw(ALL_COLUMNS.join(', '))}, ${sql.raw(db.dialect.render.now)} FROM moved`)
    .$if(replacing, (insert) => replacingOlder(plan.upsert, insert))
    .returning(['id', 'event_type', 'created_at'])
  return summarisedStatement(ctx, plan, batch, sql`moved AS (${moved}), changed AS (${changed})`, wanted)
}

/**
 * With an export file: the batch's rows come back (with the export's columns). The batch is
 * MATERIALIZED (computed once, so the LIMIT bounds the rows, cf. PostgreSQL BUG #15715); the
 * DELETE re-checks the selection, so a row changed since the batch was read is left alone.
 */
export function moveStatement(ctx: OpsContext, plan: OneStatementPlan, where: Where, position: Where, size: number, purge: boolean, columns: ExportColumns, replacing: boolean) {
  const {k, names, db} = ctx
  const cursorAt = sql.raw<string>(db.dialect.batches.exactTime('created_at'))
  const returned = ['id', 'event_type', cursorAt.as('cursor_at'), ...columns] as const
  const batch = k.with((cte) => cte('batch').materialized(), (qb) =>
    qb
      .selectFrom(names.outbox)
      .select('id')
      .where((eb) => eb.and([...where(eb), ...position(eb)]))
      .orderBy('created_at')
      .orderBy('id')
      .limit(size),
  )
  const picked = (eb: any) => eb.and([sql.raw<SqlBool>(plan.idInBatch), ...where(eb)])
  if (purge) return batch.deleteFrom(names.outbox).where(picked).returning([...returned])
  return batch
    .with('moved', (qb) => qb.deleteFrom(names.outbox).where(picked).returning([...ALL_COLUMNS]))
    .insertInto(names.archive)
    .columns([...ALL_COLUMNS, 'archived_at'])
    .expression((eb) => eb.selectFrom('moved').select([...ALL_COLUMNS, sql.raw(db.dialect.render.now).as('archived_at')]))
    .$if(replacing, (insert) => replacingOlder(plan.upsert, insert))
    .returning([...returned])
}
