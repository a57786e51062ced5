// `outbox replay`: make events deliverable again, keeping their ids (consumers dedupe on them).
// Clears published_at, failed_at, the lease and last_error and resets attempts, in batches.
// A row a relay holds a live lease on is skipped and reported: replaying it would put a
// second copy in flight.
import {sql, type RawBuilder, type SqlBool} from 'kysely'
import type {OneStatementPlan} from '../../dialects/batches.js'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {UsageError} from '../core/errors.js'
import {idForms, isUuid} from '../core/uuid.js'
import type {Where} from './batch-keyset.js'
import {batchRead, inBatch, summarisedStatement} from './batch-one-statement.js'
import {forEachBatch} from './batch-rows.js'
import {changeTarget, forEachSummarisedBatch, summaryRead, type SummarisedWork} from './batch-summarised.js'
import type {BatchOptions, Progress} from './batches.js'
import {sampleOf, type SampleEvent} from './events.js'
// what a copy from the archive brings back; the rest takes the outbox defaults (pending, 0 attempts)
import {WRITTEN_COLUMNS as EVENT_FIELDS} from '../schema/columns.js'
import {databaseNow, num, opsContext, pointInTime, requireArchiveTable, type OpsContext} from './query.js'
import {exec, run} from './statements.js'
import {countBy, tally, tallySummary} from './tally.js'
import {slot, type BatchSlot} from './templates.js'

export interface ReplaySelection {
  /** created_at at or after (inclusive); required unless ids or failedOnly */
  since?: Date | string
  /** created_at before (exclusive) */
  until?: Date | string
  types?: string[]
  aggregateId?: string
  aggregateType?: string
  /** only failed events */
  failedOnly?: boolean
  ids?: string[]
  /** copy back from the archive table (the rows leave the archive) */
  fromArchive?: boolean
}

export interface ReplayOptions extends ReplaySelection {
  batch?: number
  dryRun?: boolean
  onProgress?: (p: Progress) => void
  /** abort to stop after the batch in flight (its transaction commits); the result says interrupted */
  signal?: AbortSignal
}

/** What replay selects, in a plan and in a run alike. */
interface ReplayScope {
  source: 'outbox' | 'archive'
  since: string | null
  until: string | null
  /** rows the selection matched */
  matched: number
  byType: Record<string, number>
  /** matched but leased by a live relay, so left alone */
  skippedLeased: number
  skippedLeasedIds: string[]
  /** from the archive: the id is already in the outbox, so the archived copy stays */
  alreadyInOutbox: number
  /** those ids, the first 100 */
  alreadyInOutboxIds: string[]
  sample: SampleEvent[]
}

/** What replay would do (a dry run): nothing changed, so nothing is counted as replayed. */
export interface ReplayPlan extends ReplayScope {
  dryRun: true
  /** rows a run would make deliverable now (leased rows and ids already in the outbox left out) */
  wouldReplay: number
}

/** What a replay did. */
export interface ReplayResult extends ReplayScope {
  dryRun: false
  /** rows made deliverable */
  replayed: number
  batches: number
  /** stopped early by `signal`: rows after the last committed batch were not touched */
  interrupted: boolean
  /** created_at (ms, rounded down) of the newest row the committed batches covered: `--since` for a rerun that continues */
  doneThrough: string | null
}

/** `outbox replay --json`: the plan under --dry-run, otherwise what was done. */
export type ReplayOutput = ReplayPlan | ReplayResult

const LISTED_IDS = 100
const DELIVERABLE = {published_at: null, failed_at: null, lease_owner: null, lease_until: null, last_error: null, attempts: 0}
// 1 for a row that is as DELIVERABLE makes it already: an UPDATE that counts changed rows does not count it (SummaryThenChangePlan.updateCounts)
const ALREADY_DELIVERABLE = sql<number>`CASE WHEN published_at IS NULL AND failed_at IS NULL AND lease_owner IS NULL AND lease_until IS NULL AND last_error IS NULL AND attempts = 0 THEN 1 ELSE 0 END`
const SAMPLE = 10

/** Throws a UsageError for a selection that would be too broad or contradictory. */
export function checkSelection(s: ReplaySelection): void {
  if (s.since === undefined && !s.ids?.length && !s.failedOnly) {
    throw new UsageError((o) => `replay needs ${o('since')}, ${o('ids')} or ${o('failedOnly')}`, (o) => `e.g. outbox replay ${o('since')} 2h, or ${o('failedOnly')}, or ${o('ids')} ID,ID`)
  }
  if (s.failedOnly && s.fromArchive) throw new UsageError((o) => `${o('failedOnly')} and ${o('fromArchive')} exclude each other`, 'The archive holds published events only')
  for (const id of s.ids ?? []) if (!isUuid(id)) throw new UsageError((o) => `${o('ids')}: ${JSON.stringify(id)} is not an event id`, 'Give comma-separated UUIDs')
  // an empty value matches nothing: a mistake (an unset shell variable), not a selection
  const empty = [['types', s.types?.some((t) => t.trim() === '')], ['aggregateId', s.aggregateId?.trim() === ''], ['aggregateType', s.aggregateType?.trim() === '']] as const
  for (const [option, isEmpty] of empty) if (isEmpty) throw new UsageError((o) => `${o(option)} is empty`, (o) => `Give a value, or leave ${o(option)} out`)
}

/**
 * --ids names events: one the table does not hold is a mistake to report before anything
 * changes (an id archived meanwhile, a typo), not a row to skip without a word.
 */
async function requireIds(ctx: OpsContext, table: string, ids: string[], fromArchive: boolean): Promise<void> {
  const found = await run(ctx.db, ctx.k.selectFrom(table).select('id').where('id', 'in', idForms(ids)))
  const held = new Set(found.map((row) => String(row.id).toLowerCase()))
  const missing = ids.filter((id) => !held.has(id.toLowerCase()))
  if (missing.length === 0) return
  throw new UsageError(
    `--ids: ${missing.length} of ${ids.length} not in ${table}: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}; nothing changed`,
    fromArchive ? 'Look one up with: outbox failed show ID' : 'Look one up with: outbox failed show ID; ids only in the archive need --from-archive',
  )
}

interface Resolved {
  ctx: OpsContext
  table: string
  where: Where
  since: Date | undefined
  until: Date | undefined
}

async function resolve(db: Db, names: TableNames, s: ReplaySelection): Promise<Resolved> {
  checkSelection(s)
  const ctx = await opsContext(db, names)
  const now = await databaseNow(db)
  const since = s.since === undefined ? undefined : await pointInTime(s.since, 'since', now)
  const until = s.until === undefined ? undefined : await pointInTime(s.until, 'until', now)
  if (since && until && until <= since) throw new UsageError((o) => `${o('until')} is not after ${o('since')}`, 'The range is since (inclusive) to until (exclusive)')
  const t = db.dialect.render.timeParam.bind(db.dialect)
  const where: Where = (eb) => [
    ...(since ? [eb('created_at', '>=', t(since))] : []),
    ...(until ? [eb('created_at', '<', t(until))] : []),
    ...(s.types?.length ? [eb('event_type', 'in', s.types)] : []),
    ...(s.aggregateId !== undefined ? [eb('aggregate_id', '=', s.aggregateId)] : []),
    ...(s.aggregateType !== undefined ? [eb('aggregate_type', '=', s.aggregateType)] : []),
    ...(s.ids?.length ? [eb('id', 'in', idForms(s.ids))] : []),
    ...(s.failedOnly ? [sql<SqlBool>`published_at IS NULL AND failed_at IS NOT NULL`] : []),
  ]
  const table = s.fromArchive ? names.archive : names.outbox
  if (s.fromArchive) await requireArchiveTable(ctx)
  if (s.ids?.length) await requireIds(ctx, table, s.ids, Boolean(s.fromArchive))
  return {ctx, table, where, since, until}
}

function scope(s: ReplaySelection, r: Resolved): ReplayScope {
  return {
    source: s.fromArchive ? 'archive' : 'outbox',
    since: r.since?.toISOString() ?? null,
    until: r.until?.toISOString() ?? null,
    matched: 0,
    byType: {},
    skippedLeased: 0,
    skippedLeasedIds: [],
    alreadyInOutbox: 0,
    alreadyInOutboxIds: [],
    sample: [],
  }
}

/** A run that changed nothing: what the CLI reports when the plan found nothing to replay. */
export function nothingReplayed({dryRun: _, wouldReplay: __, ...selected}: ReplayPlan): ReplayResult {
  return {...selected, dryRun: false, replayed: 0, batches: 0, interrupted: false, doneThrough: null}
}

/** What replay would do: counts per type, leased rows, a sample. Changes nothing. */
export async function planReplay(db: Db, names: TableNames, s: ReplaySelection): Promise<ReplayPlan> {
  const r = await resolve(db, names, s)
  const {ctx, table, where} = r
  const {k} = ctx
  const out: ReplayPlan = {...scope(s, r), dryRun: true, wouldReplay: 0}
  const base = k.selectFrom(`${table} as e`).where((eb) => eb.and(where(eb)))
  // archive rows are never leased; an id already in the outbox would be skipped
  const blocked = s.fromArchive
    ? sql<number>`CASE WHEN EXISTS (SELECT 1 FROM ${sql.table(names.schema ? `${names.schema}.${names.outbox}` : names.outbox)} o WHERE o.id = e.id) THEN 1 ELSE 0 END`
    : leasedNow(ctx)
  const counted = await run(db, base.select(['event_type', sql<number>`COUNT(*)`.as('n'), sql<number>`SUM(${blocked})`.as('blocked')]).groupBy('event_type'))
  for (const row of counted) {
    const n = num(row.n)
    const skipped = num(row.blocked)
    out.matched += n
    if (s.fromArchive) out.alreadyInOutbox += skipped
    else out.skippedLeased += skipped
    if (n - skipped > 0) countBy(out.byType, String(row.event_type), n - skipped)
  }
  out.wouldReplay = out.matched - out.skippedLeased - out.alreadyInOutbox
  const sample = await run(db, base.select(['id', 'event_type', 'created_at', blocked.as('blocked')]).orderBy('created_at').orderBy('id').limit(SAMPLE + LISTED_IDS))
  out.sample = sample.filter((row) => !num(row.blocked)).slice(0, SAMPLE).map((row) => sampleOf(db.dialect, row))
  if (out.skippedLeased + out.alreadyInOutbox > 0) {
    const held = await run(db, base.select('id').where(blocked, '=', 1).orderBy('created_at').orderBy('id').limit(LISTED_IDS))
    const listed = held.map((row) => String(row.id))
    if (s.fromArchive) out.alreadyInOutboxIds = listed
    else out.skippedLeasedIds = listed
  }
  return out
}

/** Replays the selection in batches; with `dryRun`, only plans it (planReplay). */
export async function replay(db: Db, names: TableNames, options: ReplayOptions & {dryRun: true}): Promise<ReplayPlan>
export async function replay(db: Db, names: TableNames, options: ReplayOptions & {dryRun?: false}): Promise<ReplayResult>
export async function replay(db: Db, names: TableNames, options: ReplayOptions): Promise<ReplayOutput>
export async function replay(db: Db, names: TableNames, options: ReplayOptions): Promise<ReplayOutput> {
  if (options.dryRun) return planReplay(db, names, options)
  const r = await resolve(db, names, options)
  const out: ReplayResult = {...scope(options, r), dryRun: false, replayed: 0, batches: 0, interrupted: false, doneThrough: null}
  const batches: BatchOptions = {size: options.batch ?? 1000, onProgress: options.onProgress, signal: options.signal}
  const progress = options.fromArchive ? await replayFromArchive(r, batches, out) : await replayInOutbox(r, batches, out)
  return {...out, replayed: progress.changed, batches: progress.batches, interrupted: Boolean(progress.interrupted)}
}

/** In the outbox: every batch summed up by the database (forEachSummarisedBatch); rows a relay holds are skipped. */
function replayInOutbox(r: Resolved, options: BatchOptions, out: ReplayResult): Promise<Progress> {
  const {db} = r.ctx
  return forEachSummarisedBatch(r.ctx, summarisedReplays(r, options, out), options, (summary) => {
    out.matched += summary.seen
    out.skippedLeased += summary.seen - summary.changed
    for (const id of summary.skippedIds) if (out.skippedLeasedIds.length < LISTED_IDS) out.skippedLeasedIds.push(id)
    tallySummary(out, summary, SAMPLE)
    if (summary.cursor) out.doneThrough = db.dialect.render.parseTime(summary.cursor.at)?.toISOString() ?? out.doneThrough
  })
}

/** Each batch's statements, as the plan's kind says. */
function summarisedReplays({ctx, where}: Resolved, options: BatchOptions, out: ReplayResult): SummarisedWork {
  const {db, k, names} = ctx
  const plan = db.dialect.batches.plan
  // sample and listed ids are only gathered until they are full
  const wanted = () => ({sample: SAMPLE - out.sample.length, listed: LISTED_IDS - out.skippedLeasedIds.length})
  const shape = (w: {sample: number; listed: number}) => `sample ${w.sample} listed ${w.listed}`
  switch (plan.kind) {
    case 'one-statement':
      return {
        kind: plan.kind,
        statement: (position, reuse) => {
          const w = wanted()
          return reuse(shape(w), () => summarisedReplay(ctx, plan, where, position, options.size, w))
        },
      }
    case 'summary-then-change':
      return {
        kind: plan.kind,
        plan,
        statement: (position, reuse) => {
          const w = wanted()
          return reuse(shape(w), () => summaryRead(ctx, plan, where, position, options.size, {...w, span: plan.locator?.updates}, leasedNow(ctx), ALREADY_DELIVERABLE))
        },
        // two statements: the change judges leases at the instant the summary did (its read_at)
        change: (tx, {range, bySpan}, reuse) => {
          const deliver = () => {
            const target = changeTarget(ctx, plan.locator, names.outbox, bySpan)
            return k.updateTable(target.table).set(DELIVERABLE).where((eb: any) => eb.and([...target.within(eb), ...where(eb), ...range(eb), notLeased(ctx, slot.read_at)]))
          }
          return exec(tx, reuse('deliver', deliver))
        },
      }
  }
}

/** From the archive, row by row: an id already in the outbox is left in the archive. */
function replayFromArchive({ctx, table, where}: Resolved, options: BatchOptions, out: ReplayResult): Promise<Progress> {
  const {db, k, names} = ctx
  return forEachBatch(ctx, table, where, options, async (tx, rows) => {
    out.matched += rows.length
    const present = new Set((await run(tx, k.selectFrom(names.outbox).select('id').where('id', 'in', rows.map((row) => row.id)))).map((row) => String(row.id)))
    const free = rows.filter((row) => !present.has(String(row.id)))
    out.alreadyInOutbox += rows.length - free.length
    for (const row of rows) if (present.has(String(row.id)) && out.alreadyInOutboxIds.length < LISTED_IDS) out.alreadyInOutboxIds.push(String(row.id))
    // batches come in (created_at, id) order: the last row is the newest
    out.doneThrough = db.dialect.render.parseTime(rows[rows.length - 1].cursor_at)?.toISOString() ?? out.doneThrough
    if (free.length === 0) return 0
    const ids = free.map((row) => String(row.id))
    const changed = await exec(tx, k.insertInto(names.outbox).columns(EVENT_FIELDS).expression(k.selectFrom(names.archive).select(EVENT_FIELDS).where('id', 'in', ids)))
    await exec(tx, k.deleteFrom(names.archive).where('id', 'in', ids))
    tally(out, ctx, free, SAMPLE)
    return changed
  })
}

/**
 * CASE expression: 1 when a relay holds a live lease on the row (database clock), now or at
 * `at`: the marker of the instant the batch's summary read (its read_at), so that the summary
 * and the change decide alike.
 */
function leasedNow(ctx: OpsContext, at?: BatchSlot<'read_at'>): RawBuilder<number> {
  const now = at ? sql`${at}` : sql.raw(ctx.db.dialect.render.now)
  return sql<number>`CASE WHEN lease_owner IS NOT NULL AND lease_until > ${now} THEN 1 ELSE 0 END`
}

function notLeased(ctx: OpsContext, at?: BatchSlot<'read_at'>) {
  return sql<SqlBool>`NOT (${leasedNow(ctx, at)} = 1)`
}

/** A one-statement batch that replays, summed up by the database into one row; rows read but not changed are the leased ones. */
function summarisedReplay(ctx: OpsContext, plan: OneStatementPlan, where: Where, position: Where, size: number, wanted: {sample: number; listed: number}) {
  const {k, names} = ctx
  const batch = batchRead(ctx, where, position, size)
  const last = inBatch(plan)
  const changed = k
    .updateTable(names.outbox)
    .set(DELIVERABLE)
    .where((eb) => eb.and([...where(eb), ...position(eb), ...last(eb), notLeased(ctx)]))
    .returning(['id', 'event_type', 'created_at'])
  return summarisedStatement(ctx, plan, batch, sql`changed AS (${changed})`, wanted)
}
