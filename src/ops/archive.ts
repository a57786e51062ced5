// `outbox archive`: move (or delete) published events created before a cutoff, in batches:
// each batch copies its rows into the archive table and deletes them from the outbox in one
// transaction, so a crash at any point leaves every event in exactly one of the two tables.
// Never touches unpublished or failed events, nor any published more recently than
// minPublishedAge (consumers may still replay them from the broker).
import {accessSync, constants, existsSync, statSync} from 'node:fs'
import {dirname, resolve as resolvePath} from 'node:path'
import {open, type FileHandle} from 'node:fs/promises'
import {sql, type SqlBool} from 'kysely'
import type {TableNames} from '../../dialects/index.js'
import {failpoint} from '../core/failpoints.js'
import type {Db, Queryable} from '../db/index.js'
import {UsageError} from '../core/errors.js'
import {batchRead, changeTarget, countBy, forEachBatch, forEachStatementBatch, expectBatch, forEachSummarisedBatch, inBatch, summarisedStatement, summaryRead, tally, tallySummary, type BatchRow, type Progress, type Reuse, type Where} from './batches.js'
import {ALL_COLUMNS, exactIso, sampleOf, toStoredEvent, type SampleEvent, type StoredEvent} from './events.js'
import {databaseNow, exec, num, opsContext, pointInTime, requireArchiveTable, run, slot, type Compilable, type OpsContext} from './query.js'

export const DEFAULT_MIN_PUBLISHED_AGE_MS = 24 * 3_600_000

export interface ArchiveOptions {
  /** created_at strictly before this; a duration text means "ago" on the database clock */
  before: Date | string
  /** and published at least this long ago (default 24h) */
  minPublishedAgeMs?: number
  /** instead of minPublishedAgeMs: published strictly before this instant */
  publishedBefore?: Date
  /** delete instead of moving to the archive table */
  delete?: boolean
  /** also append every row to this JSON Lines file (written and synced before its batch commits) */
  toFile?: string
  batch?: number
  dryRun?: boolean
  onProgress?: (p: Progress) => void
  /** abort to stop after the batch in flight (its transaction commits); the result says interrupted */
  signal?: AbortSignal
}

export interface ArchiveResult {
  dryRun: boolean
  mode: 'move' | 'delete'
  /** created_at before (exclusive) */
  before: string
  /** published_at before (exclusive): now - minPublishedAge */
  publishedBefore: string
  /** rows moved or deleted (dry run: that would be) */
  archived: number
  byType: Record<string, number>
  batches: number
  /** stopped early by `signal`: rows after the last committed batch were not touched */
  interrupted: boolean
  file: string | null
  sample: SampleEvent[]
}

const SAMPLE = 10

async function selection(db: Db, options: ArchiveOptions) {
  const now = await databaseNow(db)
  const before = await pointInTime(options.before, 'before', now)
  const minAge = options.minPublishedAgeMs ?? DEFAULT_MIN_PUBLISHED_AGE_MS
  if (!Number.isFinite(minAge) || minAge < 0) throw new UsageError('--min-published-age must not be negative', 'Use e.g. 24h')
  const publishedBefore = options.publishedBefore ?? new Date(now.getTime() - minAge)
  const t = db.dialect.render.timeParam.bind(db.dialect)
  const where: Where = (eb) => [
    eb('created_at', '<', t(before)),
    sql<SqlBool>`published_at IS NOT NULL AND failed_at IS NULL`,
    eb('published_at', '<', t(publishedBefore)),
  ]
  return {before, publishedBefore, where}
}

function emptyResult(options: ArchiveOptions, before: Date, publishedBefore: Date, dryRun: boolean): ArchiveResult {
  return {
    dryRun,
    mode: options.delete ? 'delete' : 'move',
    before: before.toISOString(),
    publishedBefore: publishedBefore.toISOString(),
    archived: 0,
    byType: {},
    batches: 0,
    interrupted: false,
    file: options.toFile ?? null,
    sample: [],
  }
}

/** Counts per type and a sample of what archive would move. Changes nothing, writes no file. */
export async function planArchive(db: Db, names: TableNames, options: ArchiveOptions): Promise<ArchiveResult> {
  const ctx = await opsContext(db, names)
  const {k} = ctx
  if (!options.delete) await requireArchiveTable(ctx)
  const {before, publishedBefore, where} = await selection(db, options)
  const out = emptyResult(options, before, publishedBefore, true)
  const base = k.selectFrom(names.outbox).where((eb) => eb.and(where(eb)))
  for (const row of await run(db, base.select(['event_type', sql<number>`COUNT(*)`.as('n')]).groupBy('event_type'))) {
    countBy(out.byType, String(row.event_type), num(row.n))
    out.archived += num(row.n)
  }
  const sample = await run(db, base.select(['id', 'event_type', 'created_at']).orderBy('created_at').orderBy('id').limit(SAMPLE))
  out.sample = sample.map((row) => sampleOf(db.dialect, row))
  return out
}

export async function archive(db: Db, names: TableNames, options: ArchiveOptions): Promise<ArchiveResult> {
  if (options.dryRun) return planArchive(db, names, options)
  const ctx = await opsContext(db, names)
  if (!options.delete) await requireArchiveTable(ctx)
  const {before, publishedBefore, where} = await selection(db, options)
  const out = emptyResult(options, before, publishedBefore, false)
  const file: FileHandle | undefined = options.toFile ? await openExport(options.toFile) : undefined
  try {
    const first = await moveAll(ctx, where, options, out, file, {replacing: false})
    if (!first.conflict) return first.result
    // An id the archive holds already failed one batch on its primary key (rolled back, nothing
    // of it written): the rest of the run takes over such rows. Only then, because the clause
    // that does it costs every batch (PostgreSQL, 200k rows: 163k against 215k rows/s).
    const done = first.result
    const onProgress = options.onProgress && ((p: Progress) => options.onProgress!({...p, seen: p.seen + done.archived, changed: p.changed + done.archived, batches: p.batches + done.batches}))
    const rest = await moveAll(ctx, where, {...options, onProgress}, out, file, {replacing: true})
    if (rest.conflict) throw rest.conflict
    return {...rest.result, archived: done.archived + rest.result.archived, batches: done.batches + rest.result.batches}
  } finally {
    await file?.close()
  }
}

/**
 * One pass of archive's batches over the selection; `replacing`: an id the archive holds
 * already takes the newer copy (replacingOlder). Without it, a batch that meets such an id
 * rolls back and the pass ends with `conflict` (the error), its earlier batches committed.
 */
async function moveAll(ctx: OpsContext, where: Where, options: ArchiveOptions, out: ArchiveResult, file: FileHandle | undefined, mode: {replacing: boolean}): Promise<{result: ArchiveResult; conflict?: unknown}> {
  const {db, names} = ctx
  const columns = file ? exportColumns(ctx) : []
  const size = options.batch ?? 1000
  let committed: Progress = {seen: 0, changed: 0, batches: 0}
  const signal = options.signal
  const onProgress = (p: Progress) => {
    committed = p
    options.onProgress?.(p)
  }
  const exportRows = async (rows: BatchRow[]) => {
    if (!file) return
    // on disk before the delete commits: a crash may repeat rows in the file, never lose them
    await file.write(rows.map((row) => JSON.stringify(exportedEvent(ctx, row)) + '\n').join(''))
    await file.sync()
  }
  const done = (progress: Progress): ArchiveResult => ({...out, archived: progress.changed, batches: progress.batches, interrupted: Boolean(progress.interrupted)})
  try {
    if (!file) {
      const purge = Boolean(options.delete)
      const oneStatement = db.dialect.batches.writableCte
      const progress = await forEachSummarisedBatch(
        ctx,
        {
          size,
          onProgress,
          signal,
          // moveRange has the failpoint between its copy and its delete
          beforeCommit: oneStatement ? () => failpoint('archive.mid-batch') : undefined,
          change: oneStatement
            ? undefined
            : (tx, {range, rows, bySpan}, reuse) =>
                moveRange(ctx, tx, where, range, purge, {target: changeTarget(ctx, names.outbox, bySpan), locked: db.dialect.batches.batchReadLocks ? {rows, byId: bySpan} : undefined, reuse, replacing: mode.replacing}),
        },
        // the sample is only gathered until it is full
        (position, reuse) => {
          const wanted = {sample: SAMPLE - out.sample.length, listed: 0}
          return reuse(`sample ${wanted.sample}`, {}, () =>
            oneStatement ? summarisedMove(ctx, where, position, size, purge, wanted.sample, mode.replacing) : summaryRead(ctx, where, position, size, wanted),
          )
        },
        (summary) => tallySummary(out, summary, SAMPLE),
      )
      return {result: done(progress)}
    }
    if (db.dialect.batches.writableCte) {
      const progress = await forEachStatementBatch(
        ctx,
        {size, onProgress, signal},
        (position) => moveStatement(ctx, where, position, size, Boolean(options.delete), columns, mode.replacing),
        async (_tx, rows) => {
          await exportRows(rows)
          failpoint('archive.mid-batch')
          tally(out, ctx, rows, SAMPLE)
          return rows.length
        },
      )
      return {result: done(progress)}
    }
    const progress = await forEachBatch(ctx, names.outbox, where, {size, columns, onProgress, signal}, async (tx, rows, range) => {
      const moved = await moveRange(ctx, tx, where, range, Boolean(options.delete), {...lockedRows(ctx, rows), replacing: mode.replacing})
      // after the statements (a batch they refuse writes nothing), before the commit
      await exportRows(rows)
      tally(out, ctx, rows, SAMPLE)
      return moved
    })
    return {result: done(progress)}
  } catch (error) {
    if (mode.replacing || options.delete || !db.dialect.errors.isDuplicateKey(error)) throw error
    return {result: done(committed), conflict: error}
  }
}

// times as the database holds them (microseconds on PostgreSQL and MySQL), not as a driver's Date
const TIME_COLUMNS = ['created_at', 'published_at', 'lease_until', 'failed_at'] as const

/**
 * What the export reads of each row besides id, event_type and cursor_at: every column, the
 * times also as exact text (`<column>_text`: an alias of their own, since ORDER BY created_at
 * would otherwise sort by the text alias on MySQL and PostgreSQL, past the index).
 */
function exportColumns(ctx: OpsContext) {
  const exact = TIME_COLUMNS.map((c) => sql.raw<string>(ctx.db.dialect.batches.exactTime(c)).as(`${c}_text`))
  return [...ALL_COLUMNS.filter((c) => c !== 'id' && c !== 'event_type'), ...exact]
}

/** One line of the export: the event's columns under failed show --json's names, its times to the microsecond where stored so. */
function exportedEvent(ctx: OpsContext, row: BatchRow): StoredEvent {
  const event = toStoredEvent(ctx.db.dialect, row)
  const exact = (c: (typeof TIME_COLUMNS)[number]) => exactIso(row[`${c}_text`])
  return {...event, createdAt: exact('created_at') ?? event.createdAt, publishedAt: exact('published_at'), leaseUntil: exact('lease_until'), failedAt: exact('failed_at')}
}

/** Fails fast (before connecting or planning) when --to-file could not be written. */
export function checkExportPath(path: string): void {
  const fail = (why: string) => {
    throw new UsageError(`cannot write --to-file ${path} (${why})`, 'Give a writable file path')
  }
  try {
    if (existsSync(path)) {
      if (statSync(path).isDirectory()) fail('it is a directory')
      accessSync(path, constants.W_OK)
    } else {
      const dir = dirname(resolvePath(path))
      if (!existsSync(dir)) fail(`directory ${dir} does not exist`)
      accessSync(dir, constants.W_OK)
    }
  } catch (error) {
    if (error instanceof UsageError) throw error
    fail((error as NodeJS.ErrnoException).code ?? String(error))
  }
}

/** Appends (a rerun after a crash continues the same file); refuses a directory or an unwritable path. */
async function openExport(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'a')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new UsageError(`cannot write --to-file ${path} (${code})`, 'Give a writable file path')
  }
}

/**
 * A batch's rows copied into the archive (unless purging), picked again through the batch's
 * (created_at, id) range, then deleted. Every copied row is deleted or the batch rolls back:
 * never in both tables, never in neither.
 *
 * With a `locked` batch (MySQL/MariaDB, where the batch's read locked its rows; and every
 * row-by-row batch), the delete goes by range too, as `ORDER BY created_at, id LIMIT <batch
 * size>`: InnoDB's DELETE locks the index record after a range before it sees the range has
 * ended, so without the LIMIT it would wait on the next batch's first row whenever another
 * session holds it; with it, the scan stops at the batch's last row. (By id list instead:
 * 17-18 ms per 1000 rows against 13 ms.) The LIMIT could only pick a wrong row if one entered
 * the range after the copy; the range ends at the batch's last row, so that row would then be
 * the one left behind: it must be gone, or the batch rolls back.
 *
 * Where rows are stored in id order (Dialect.clusteredById) and the batch's ids ascend in its
 * order (time-ordered ids such as UUIDv7, as our producer writes them: idsAscend, or MySQL's
 * summary returning the id span), both statements also say `id BETWEEN first AND last` and
 * the delete goes `ORDER BY id`: the server reads the batch in place, and the LIMIT still ends
 * the scan on the batch's last row, which is now also its largest id, so the same check holds.
 *
 * A summarised batch's move (SQLite, MySQL) builds its statements through its `reuse` (once
 * per run) and, `bySpan`, reads the table by the batch's locator span (changeTarget); the
 * range and selection still pick the rows.
 */
async function moveRange(ctx: OpsContext, tx: Queryable, where: Where, range: Where, purge: boolean, batch: {target: ChangeTarget; locked?: Locked; reuse?: Reuse; replacing: boolean}): Promise<number> {
  const {k, names, db} = ctx
  const {target, locked, reuse, replacing} = batch
  const picked = (eb: any) => eb.and([...target.within(eb), ...where(eb), ...range(eb)])
  const prepared = (shape: string, build: () => Compilable) => (reuse ? reuse(shape, {}, build) : build())
  // a template takes the batch's values as stand-ins (forEachSummarisedBatch binds them)
  const value = <T>(name: string, v: T) => (reuse ? slot(name) : v)
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
    return replacing ? replacingOlder(ctx, insert) : insert
  }
  const counted = await exec(tx, prepared(replacing ? 'copy replacing' : 'copy', copy))
  // MySQL counts a row the upsert updated twice: between rows and 2 x rows. Exact enough: the
  // delete below must take exactly the batch and leave no row of its range behind.
  const copied = replacing && locked && db.dialect.batches.upsert.updatedCountsTwice && counted > locked.rows && counted <= 2 * locked.rows ? locked.rows : counted
  if (locked) expectBatch(copied, locked.rows)
  failpoint('archive.mid-batch')
  return locked ? removeLocked(locked) : expectBatch(await exec(tx, prepared('delete', remove)), copied)
}

/**
 * One id, one event (consumers dedupe on it): an id the archive holds already (archived, then
 * written again by a producer with its own ids, or brought back and archived again) takes the
 * newer copy instead of failing the batch on the archive's primary key, every rerun again.
 */
function replacingOlder<T extends {onConflict: any; onDuplicateKeyUpdate: any}>(ctx: OpsContext, insert: T): T {
  const columns = [...ALL_COLUMNS.filter((c) => c !== 'id'), 'archived_at']
  if (ctx.db.dialect.batches.upsert.style === 'on-duplicate-key') {
    return insert.onDuplicateKeyUpdate(Object.fromEntries(columns.map((c) => [c, sql`VALUES(${sql.ref(c)})`])))
  }
  return insert.onConflict((oc: any) => oc.column('id').doUpdateSet((eb: any) => Object.fromEntries(columns.map((c) => [c, eb.ref(`excluded.${c}`)]))))
}

type ChangeTarget = ReturnType<typeof changeTarget>

/** A batch whose rows this transaction locked (MySQL/MariaDB; and every row-by-row batch). */
interface Locked {
  /** how many: the copy and the delete must each take exactly these */
  rows: number
  /** the batch's last row, which must be gone after the delete (a template binds last_id instead) */
  lastId?: string
  /** the batch is an id range (the target reads it by id): the delete goes in id order */
  byId: boolean
}

/** A row-by-row batch: its rows are locked; where their ids follow their order, it is read as an id range. */
function lockedRows(ctx: OpsContext, rows: BatchRow[]): {target: ChangeTarget; locked: Locked} {
  const ids = rows.map((row) => String(row.id))
  const [first, last] = [ids[0], ids[ids.length - 1]]
  const byId = ctx.db.dialect.batches.clusteredById && idsAscend(ids)
  const target = byId ? {table: ctx.names.outbox, within: ((eb) => [eb('id', '>=', first), eb('id', '<=', last)]) as Where} : changeTarget(ctx, ctx.names.outbox, false)
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

/**
 * PostgreSQL without an export file: the same move as moveStatement, summed up by the
 * database into one row (Dialect.batchSummary) instead of returning every moved row.
 */
function summarisedMove(ctx: OpsContext, where: Where, position: Where, size: number, purge: boolean, sample: number, replacing: boolean) {
  const {k, names, db} = ctx
  const batch = batchRead(ctx, where, position, size)
  const picked = (eb: any) => eb.and([...where(eb), ...position(eb), ...inBatch(eb)])
  const wanted = {sample, listed: 0}
  if (purge) {
    const changed = k.deleteFrom(names.outbox).where(picked).returning(['id', 'event_type', 'created_at'])
    return summarisedStatement(ctx, batch, sql`changed AS (${changed})`, wanted)
  }
  const moved = k.deleteFrom(names.outbox).where(picked).returning([...ALL_COLUMNS])
  const changed = k
    .insertInto(names.archive)
    .columns([...ALL_COLUMNS, 'archived_at'])
    // raw: `moved` is declared in the raw WITH, where a --schema prefix must not reach it
    .expression(sql`SELECT ${sql.raw(ALL_COLUMNS.join(', '))}, ${sql.raw(db.dialect.render.now)} FROM moved`)
    .$if(replacing, (insert) => replacingOlder(ctx, insert))
    .returning(['id', 'event_type', 'created_at'])
  return summarisedStatement(ctx, batch, sql`moved AS (${moved}), changed AS (${changed})`, wanted)
}

/**
 * PostgreSQL: one statement per batch. The batch is MATERIALIZED (computed once, so the LIMIT
 * bounds the rows, cf. BUG #15715); the DELETE re-checks the selection, so a row changed since
 * the batch was read is left alone; no separate locking read is needed.
 */
function moveStatement(ctx: OpsContext, where: Where, position: Where, size: number, purge: boolean, columns: ReturnType<typeof exportColumns> | [], replacing: boolean) {
  const {k, names, db} = ctx
  const cursorAt = sql.raw<string>(db.dialect.batches.exactTime('created_at'))
  const returned = ['id', 'event_type', cursorAt.as('cursor_at'), ...columns] as const
  const batch = k
    .with((cte) => cte('batch').materialized(), (qb) =>
      qb
        .selectFrom(names.outbox)
        .select('id')
        .where((eb) => eb.and([...where(eb), ...position(eb)]))
        .orderBy('created_at')
        .orderBy('id')
        .limit(size),
    )
  // = ANY(ARRAY(...)): a primary-key lookup per id; `IN (SELECT ...)` may plan a full scan per batch
  const picked = (eb: any) => eb.and([sql<SqlBool>`id = ANY(ARRAY(SELECT id FROM batch))`, ...where(eb)])
  if (purge) return batch.deleteFrom(names.outbox).where(picked).returning([...returned])
  return batch
    .with('moved', (qb) => qb.deleteFrom(names.outbox).where(picked).returning([...ALL_COLUMNS]))
    .insertInto(names.archive)
    .columns([...ALL_COLUMNS, 'archived_at'])
    .expression((eb) => eb.selectFrom('moved').select([...ALL_COLUMNS, sql.raw(db.dialect.render.now).as('archived_at')]))
    .$if(replacing, (insert) => replacingOlder(ctx, insert))
    .returning([...returned])
}
