// `outbox archive`: move (or delete) published events created before a cutoff, in batches:
// each batch copies its rows into the archive table and deletes them from the outbox in one
// transaction, so a crash at any point leaves every event in exactly one of the two tables.
// Never touches unpublished or failed events, nor any published more recently than
// minPublishedAge (consumers may still replay them from the broker).
import type {FileHandle} from 'node:fs/promises'
import {sql, type SqlBool} from 'kysely'
import type {BatchPlan} from '../../dialects/batches.js'
import type {TableNames} from '../../dialects/index.js'
import {failpoint} from '../core/failpoints.js'
import type {Db} from '../db/index.js'
import {UsageError} from '../core/errors.js'
import {exportColumns, exportRows, openExport} from './archive-export.js'
import {lockedRows, moveRange} from './archive-move.js'
import {planPartitions, retentionOf, retirePartitions, type PartitionRetentionPlan, type PartitionRetentionResult} from './archive-partitions.js'
import {moveStatement, summarisedMove} from './archive-one-statement.js'
import type {Where} from './batch-keyset.js'
import {forEachStatementBatch} from './batch-one-statement.js'
import {forEachBatch} from './batch-rows.js'
import {changeTarget, forEachSummarisedBatch, summaryRead, type SummarisedWork} from './batch-summarised.js'
import type {BatchOptions, Progress} from './batches.js'
import {sampleOf, type SampleEvent} from './events.js'
import {databaseNow, num, opsContext, pointInTime, requireArchiveTable, type OpsContext} from './query.js'
import {run} from './statements.js'
import {countBy, tally, tallySummary} from './tally.js'

export {checkExportPath} from './archive-export.js'

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

/** What archive selects, in a plan and in a run alike. */
interface ArchiveScope {
  mode: 'move' | 'delete'
  /** created_at before (exclusive) */
  before: string
  /** published_at before (exclusive): now - minPublishedAge */
  publishedBefore: string
  byType: Record<string, number>
  file: string | null
  sample: SampleEvent[]
}

/** What archive would do (a dry run): nothing changed, so nothing is counted as archived. */
export interface ArchivePlan extends ArchiveScope {
  dryRun: true
  /** rows a run would move or delete */
  wouldArchive: number
  /**
   * A partitioned outbox: the partitions taken out whole, those held and why, and what the
   * batches take; null when the table is not partitioned (as init makes it) or with a file
   * to write (every row goes through the batches then).
   */
  partitions: PartitionRetentionPlan | null
}

/** What an archive run did. */
export interface ArchiveResult extends ArchiveScope {
  dryRun: false
  /** rows moved or deleted */
  archived: number
  batches: number
  /** stopped early by `signal`: rows after the last committed batch were not touched */
  interrupted: boolean
  /** a partitioned outbox: what was taken out whole, what was held; null as in the plan */
  partitions: PartitionRetentionResult | null
}

/** `outbox archive --json`: the plan under --dry-run, otherwise what was done. */
export type ArchiveOutput = ArchivePlan | ArchiveResult

const SAMPLE = 10

async function selection(db: Db, options: ArchiveOptions) {
  const now = await databaseNow(db)
  const before = await pointInTime(options.before, 'before', now)
  const minAge = options.minPublishedAgeMs ?? DEFAULT_MIN_PUBLISHED_AGE_MS
  if (!Number.isFinite(minAge) || minAge < 0) throw new UsageError((o) => `${o('minPublishedAgeMs')} must not be negative`, 'Use e.g. 24h')
  const publishedBefore = options.publishedBefore ?? new Date(now.getTime() - minAge)
  const t = db.dialect.render.timeParam.bind(db.dialect)
  const where: Where = (eb) => [
    eb('created_at', '<', t(before)),
    sql<SqlBool>`published_at IS NOT NULL AND failed_at IS NULL`,
    eb('published_at', '<', t(publishedBefore)),
  ]
  return {before, publishedBefore, where}
}

function scope(options: ArchiveOptions, before: Date, publishedBefore: Date): ArchiveScope {
  return {
    mode: options.delete ? 'delete' : 'move',
    before: before.toISOString(),
    publishedBefore: publishedBefore.toISOString(),
    byType: {},
    file: options.toFile ?? null,
    sample: [],
  }
}

/** A run that changed nothing: what the CLI reports when the plan found nothing to archive. */
export function nothingArchived({dryRun: _, wouldArchive: __, partitions, ...selected}: ArchivePlan): ArchiveResult {
  const held = partitions && {detach: partitions.detach, detachWhy: partitions.detachWhy, retired: [], finished: [], held: partitions.held, restored: [], refilled: [], batchedRows: 0}
  return {...selected, dryRun: false, archived: 0, batches: 0, interrupted: false, partitions: held}
}

/** What a run has to do: the rows, or, where there are none, the empty partitions it would drop (0: nothing). */
export function archiveWork(plan: ArchivePlan): number {
  const partitions = plan.partitions ? plan.partitions.whole.length + plan.partitions.unfinished.length : 0
  return plan.wouldArchive > 0 ? plan.wouldArchive : partitions
}

/** Counts per type and a sample of what archive would move. Changes nothing, writes no file. */
export async function planArchive(db: Db, names: TableNames, options: ArchiveOptions): Promise<ArchivePlan> {
  const ctx = await opsContext(db, names)
  const {k} = ctx
  if (!options.delete) await requireArchiveTable(ctx)
  const {before, publishedBefore, where} = await selection(db, options)
  const out: ArchivePlan = {...scope(options, before, publishedBefore), dryRun: true, wouldArchive: 0, partitions: null}
  const base = k.selectFrom(names.outbox).where((eb) => eb.and(where(eb)))
  for (const row of await run(db, base.select(['event_type', sql<number>`COUNT(*)`.as('n')]).groupBy('event_type'))) {
    countBy(out.byType, String(row.event_type), num(row.n))
    out.wouldArchive += num(row.n)
  }
  const sample = await run(db, base.select(['id', 'event_type', 'created_at']).orderBy('created_at').orderBy('id').limit(SAMPLE))
  out.sample = sample.map((row) => sampleOf(db.dialect, row))
  const retention = !options.toFile && (await retentionOf(ctx, publishedBefore))
  if (retention) {
    const {unfinishedByType, ...planned} = await planPartitions(retention, before)
    const sum = (spans: {rows: number}[]) => spans.reduce((n, p) => n + p.rows, 0)
    for (const [type, n] of Object.entries(unfinishedByType)) countBy(out.byType, type, n)
    out.wouldArchive += sum(planned.unfinished)
    out.partitions = {...planned, batchedRows: out.wouldArchive - sum(planned.whole) - sum(planned.unfinished)}
  }
  return out
}

/** Archives (or deletes) the selection in batches; with `dryRun`, only plans it (planArchive). */
export async function archive(db: Db, names: TableNames, options: ArchiveOptions & {dryRun: true}): Promise<ArchivePlan>
export async function archive(db: Db, names: TableNames, options: ArchiveOptions & {dryRun?: false}): Promise<ArchiveResult>
export async function archive(db: Db, names: TableNames, options: ArchiveOptions): Promise<ArchiveOutput>
export async function archive(db: Db, names: TableNames, options: ArchiveOptions): Promise<ArchiveOutput> {
  if (options.dryRun) return planArchive(db, names, options)
  const ctx = await opsContext(db, names)
  if (!options.delete) await requireArchiveTable(ctx)
  const {before, publishedBefore, where} = await selection(db, options)
  const out: ArchiveResult = {...scope(options, before, publishedBefore), dryRun: false, archived: 0, batches: 0, interrupted: false, partitions: null}
  // whole partitions first (none with a file to write: every row goes through the batches then)
  const retention = !options.toFile && (await retentionOf(ctx, publishedBefore))
  if (!retention) return archiveInBatches(ctx, where, options, out)
  let taken = 0
  const onRetired = (n: number) => {
    taken += n
    options.onProgress?.({seen: taken, changed: taken, batches: 0})
  }
  const retired = await retirePartitions(retention, {mode: out.mode, before, byType: out.byType, signal: options.signal, onRetired})
  out.partitions = {...retired.result, batchedRows: 0}
  if (retired.interrupted) return {...out, archived: retired.rows, interrupted: true}
  const onProgress = options.onProgress && ((p: Progress) => options.onProgress!({...p, seen: p.seen + taken, changed: p.changed + taken}))
  const batched = await archiveInBatches(ctx, where, {...options, onProgress}, out)
  return {...batched, archived: batched.archived + retired.rows, partitions: {...out.partitions, batchedRows: batched.archived}}
}

/** The selection's rows in batches (what whole partitions left of it). */
async function archiveInBatches(ctx: OpsContext, where: Where, options: ArchiveOptions, out: ArchiveResult): Promise<ArchiveResult> {
  const file: FileHandle | undefined = options.toFile ? await openExport(options.toFile) : undefined
  try {
    const first = await moveAll(ctx, where, options, out, file, {replacing: false})
    if (!first.conflict) return first.result
    // An id the archive holds already failed one batch on its primary key (rolled back, nothing
    // of it written): the rest of the run takes over such rows. Only then, because the clause
    // that does it costs every batch (BENCHMARKS.md, figures behind the code's choices).
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
  const {db} = ctx
  const plan = db.dialect.batches.plan
  let committed: Progress = {seen: 0, changed: 0, batches: 0}
  const onProgress = (p: Progress) => {
    committed = p
    options.onProgress?.(p)
  }
  const batches: BatchOptions = {size: options.batch ?? 1000, onProgress, signal: options.signal}
  const pass: Pass = {ctx, plan, where, options: batches, purge: Boolean(options.delete), replacing: mode.replacing, out}
  const done = (progress: Progress): ArchiveResult => ({...out, archived: progress.changed, batches: progress.batches, interrupted: Boolean(progress.interrupted)})
  try {
    return {result: done(file ? await moveExported(pass, file) : await moveSummarised(pass))}
  } catch (error) {
    if (mode.replacing || options.delete || !db.dialect.errors.isDuplicateKey(error)) throw error
    return {result: done(committed), conflict: error}
  }
}

/** What one pass of archive's batches works with. */
interface Pass {
  ctx: OpsContext
  plan: BatchPlan
  where: Where
  options: BatchOptions
  purge: boolean
  replacing: boolean
  out: ArchiveResult
}

/** Without an export file: every batch summed up by the database (forEachSummarisedBatch). */
function moveSummarised(pass: Pass): Promise<Progress> {
  return forEachSummarisedBatch(pass.ctx, summarisedMoves(pass), pass.options, (summary) => tallySummary(pass.out, summary, SAMPLE))
}

/** Each batch's statements, as the plan's kind says. */
function summarisedMoves({ctx, plan, where, options, purge, replacing, out}: Pass): SummarisedWork {
  // the sample is only gathered until it is full
  const sample = () => SAMPLE - out.sample.length
  switch (plan.kind) {
    case 'one-statement':
      return {
        kind: plan.kind,
        statement: (position, reuse) => {
          const wanted = sample()
          return reuse(`sample ${wanted}`, () => summarisedMove(ctx, plan, where, position, options.size, purge, wanted, replacing))
        },
        // moveRange has the failpoint between its copy and its delete; one statement does both
        beforeCommit: () => failpoint('archive.mid-batch'),
      }
    case 'summary-then-change':
      return {
        kind: plan.kind,
        plan,
        statement: (position, reuse) => {
          const wanted = sample()
          return reuse(`sample ${wanted}`, () => summaryRead(ctx, plan, where, position, options.size, {sample: wanted, listed: 0}))
        },
        change: (tx, {range, rows, bySpan}, reuse) => {
          // held rows are taken by count; by span, a primary-key locator's span is an id range
          const locked = plan.exclusion === 'row-locks' ? {rows, byId: bySpan && plan.locator?.kind === 'primary-key'} : undefined
          return moveRange(ctx, tx, where, range, purge, {target: changeTarget(ctx, plan.locator, ctx.names.outbox, bySpan), locked, reuse, replacing})
        },
      }
  }
}

/** With an export file: the batch's rows come back to be written to it before the batch commits. */
function moveExported({ctx, plan, where, options, purge, replacing, out}: Pass, file: FileHandle): Promise<Progress> {
  const columns = exportColumns(ctx)
  switch (plan.kind) {
    case 'one-statement':
      return forEachStatementBatch(
        ctx,
        plan,
        options,
        (position) => moveStatement(ctx, plan, where, position, options.size, purge, columns, replacing),
        async (_tx, rows) => {
          await exportRows(ctx, file, rows)
          failpoint('archive.mid-batch')
          tally(out, ctx, rows, SAMPLE)
          return rows.length
        },
      )
    case 'summary-then-change':
      return forEachBatch(ctx, ctx.names.outbox, where, {...options, columns}, async (tx, rows, range) => {
        const moved = await moveRange(ctx, tx, where, range, purge, {...lockedRows(ctx, plan, rows), replacing})
        // after the statements (a batch they refuse writes nothing), before the commit
        await exportRows(ctx, file, rows)
        tally(out, ctx, rows, SAMPLE)
        return moved
      })
  }
}
