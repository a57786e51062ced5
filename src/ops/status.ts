// `outbox status`: backlog, failures and end-to-end latency from the database clock.
// Reads only the pending part of the table (pending partial index / claim index prefix),
// the failed rows (failed index) and the published window (published_at index / claim
// index range): never the whole history.
import {sql, type Expression, type SqlBool} from 'kysely'
import type {Sql, TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {partitionsAhead, type PartitionsAhead} from './partitions.js'
import {databaseNow, num, opsContext, type OpsContext} from './query.js'
import {toSql} from './statements.js'

export interface LatencySeconds {
  p50: number | null
  p95: number | null
  p99: number | null
  max: number | null
}

export interface StatusFigures {
  /** unpublished and not failed (includes inFlight, expiredLeases and retrying) */
  pending: number
  /** leased, lease still live by the database clock */
  inFlight: number
  /** leased, lease lapsed: the relay holding it died or stalled; claimable again */
  expiredLeases: number
  /** pending, not leased, attempted before (waiting for the next attempt time) */
  retrying: number
  failed: number
  /** published within the window */
  published: number
  oldestPendingAgeSeconds: number | null
  oldestPendingId: string | null
  oldestPendingType: string | null
  latencySeconds: LatencySeconds
  /** the window's latencies added up: over `published`, the mean (Prometheus: the summary's _sum) */
  latencySumSeconds: number
  /** published per minute over the window */
  throughputPerMinute: number
}

export interface TypeStatus extends StatusFigures {
  eventType: string
}

export interface StatusReport extends StatusFigures {
  /** the database clock when the figures were read (ISO-8601) */
  at: string
  windowSeconds: number
  table: string
  byType?: TypeStatus[]
  /** a partitioned outbox only: where its last range ends, and a warning when that is near */
  partitions?: PartitionsAhead
}

export interface StatusOptions {
  windowMs: number
  byType?: boolean
}

const PERCENTILES = {p50: 500, p95: 950, p99: 990} as const

/** What status reads, one statement per part of the table; `windowByType` only with --by type. */
export interface StatusStatements {
  pending: Sql
  failed: Sql
  oldest: Sql
  window: Sql
  windowByType?: Sql
}

/**
 * The statements readStatus runs at the database instant `now`: each reads the pending rows,
 * the failed rows or the window through an index, never the history
 * (test/ops/status-reads.test.ts counts the rows each one reads). `pending` here counts from the
 * start of the table; readStatus runs pendingStatement's, bounded by the oldest pending event.
 * Where the dialect has batches.snapshotAgo (PostgreSQL), the window ends at the running
 * transaction's clock instead of `now` (windowStartOf).
 */
export async function statusStatements(db: Db, names: TableNames, options: StatusOptions, now: Date): Promise<StatusStatements> {
  const ctx = await opsContext(db, names)
  return {pending: pendingStatement(ctx, now), ...readsBesidePending(ctx, options, now)}
}

/** Every status statement but the pending count, which readStatus bounds by what `oldest` returns. */
function readsBesidePending(ctx: OpsContext, options: StatusOptions, now: Date): Omit<StatusStatements, 'pending'> {
  const windowStart = windowStartOf(ctx, options.windowMs, now)
  return {
    failed: toSql(failedByType(ctx)),
    oldest: toSql(oldestPending(ctx, Boolean(options.byType))),
    window: toSql(latencyRanks(ctx, windowStart, false)),
    ...(options.byType && {windowByType: toSql(latencyRanks(ctx, windowStart, true))}),
  }
}

/**
 * Where the window starts: `now` less the window, as an expression of the snapshot's clock where
 * the dialect has one that every statement of the snapshot shares (batches.snapshotAgo: no
 * parameter, so PostgreSQL keeps one plan per connection), else bound. Inside readStatus's
 * snapshot both are the same instant; statusStatements outside one measures it from its own now.
 */
function windowStartOf({db}: OpsContext, windowMs: number, now: Date): Expression<unknown> {
  const ago = db.dialect.batches.snapshotAgo
  return ago ? sql.raw(ago(windowMs)) : sql`${db.dialect.render.timeParam(new Date(now.getTime() - windowMs))}`
}

/**
 * The pending count at `now`, of the rows created at or after `from` (undefined: all). Every
 * pending row is at least as old as the oldest: from there on, a partitioned outbox plans (and
 * reads) only the ranges from the oldest pending event's on.
 */
export function pendingStatement(ctx: OpsContext, now: Date, from?: Date): Sql {
  const time = ctx.db.dialect.render.timeParam
  return toSql(pendingByType(ctx, time(now), from && time(from)))
}

/**
 * Rows each status statement reads from the outbox table, as the server counts them
 * (Dialect.analyzeRows: each statement runs under EXPLAIN ANALYZE / ANALYZE); undefined where
 * the database counts none (SQLite: its plan, Dialect.verify.explain, names the index instead).
 */
export async function statusRowsRead(db: Db, names: TableNames, options: StatusOptions, now: Date): Promise<Partial<Record<keyof StatusStatements, number>> | undefined> {
  const analyze = db.dialect.verify.analyzeRows
  if (!analyze) return undefined
  const rows: Partial<Record<keyof StatusStatements, number>> = {}
  for (const [part, statement] of Object.entries(await statusStatements(db, names, options, now))) {
    rows[part as keyof StatusStatements] = analyze.rowsRead(await db.query(analyze.statement(statement)), names.outbox)
  }
  return rows
}

/**
 * Every statement reads the same snapshot (Db.transaction's `snapshot`: one read-only
 * REPEATABLE READ transaction, SQLite's read transaction), so an event a relay moves meanwhile
 * is counted once: pending + failed + published add up in every report.
 */
export async function readStatus(db: Db, names: TableNames, options: StatusOptions): Promise<StatusReport> {
  const read = await readInSnapshot(db, names, options)
  // the catalog, not the rows: outside the snapshot (a partitioned outbox only)
  const partitions = await partitionsAhead(db, names, new Date(read.at))
  return partitions ? {...read, partitions} : read
}

function readInSnapshot(db: Db, names: TableNames, options: StatusOptions): Promise<StatusReport> {
  return db.transaction(async (tx) => {
    const read = (statement: Sql) => tx.query(statement, {prepare: db.dialect.batches.prepareReads})
    const now = await databaseNow({dialect: db.dialect, query: tx.query.bind(tx)})
    const ctx = await opsContext(db, names)
    const statements = readsBesidePending(ctx, options, now)
    const oldest = await read(statements.oldest)
    // none pending, no count; otherwise from the oldest on (pendingStatement)
    const from = oldestCreatedAt(db, oldest)
    const rows = {
      pending: from ? await read(pendingStatement(ctx, now, from)) : [],
      failed: await read(statements.failed),
      oldest,
      window: await read(statements.window),
      windowByType: statements.windowByType ? await read(statements.windowByType) : [],
    }
    return report(db, names, options, now, rows)
  }, {snapshot: true, first: db.dialect.batches.snapshotFirst})
}

type StatusRows = Record<keyof StatusStatements, Record<string, unknown>[]>

function report(db: Db, names: TableNames, options: StatusOptions, now: Date, rows: StatusRows): StatusReport {
  const {pending: pendingRows, failed: failedRows, oldest: oldestRows, window: windowRows, windowByType: byTypeWindow} = rows
  const minutes = options.windowMs / 60_000
  const types = new Map<string, TypeStatus>()
  const entry = (type: string) => {
    let e = types.get(type)
    if (!e) types.set(type, (e = {eventType: type, ...emptyFigures()}))
    return e
  }
  for (const r of pendingRows) {
    Object.assign(entry(String(r.event_type)), {
      pending: num(r.pending),
      inFlight: num(r.in_flight),
      expiredLeases: num(r.expired),
      retrying: num(r.retrying),
    })
  }
  for (const r of failedRows) entry(String(r.event_type)).failed = num(r.failed)
  const oldest = oldestRows.map((r) => ({
    id: String(r.id),
    type: String(r.event_type),
    age: round((now.getTime() - (db.dialect.render.parseTime(r.created_at) as Date).getTime()) / 1000),
  }))
  for (const o of options.byType ? oldest : []) {
    Object.assign(entry(o.type), {oldestPendingAgeSeconds: Math.max(0, o.age), oldestPendingId: o.id, oldestPendingType: o.type})
  }
  for (const [type, window] of groupRanks(byTypeWindow)) {
    Object.assign(entry(type), {published: window.count, latencySeconds: window.latency, latencySumSeconds: window.sum, throughputPerMinute: round(window.count / minutes)})
  }

  const total = groupRanks(windowRows).get('') ?? {count: 0, sum: 0, latency: emptyLatency()}
  const sum = (key: 'pending' | 'inFlight' | 'expiredLeases' | 'retrying' | 'failed') =>
    [...types.values()].reduce((n, t) => n + t[key], 0)
  const first = oldest[0]
  const report: StatusReport = {
    at: now.toISOString(),
    windowSeconds: options.windowMs / 1000,
    table: names.schema ? `${names.schema}.${names.outbox}` : names.outbox,
    pending: sum('pending'),
    inFlight: sum('inFlight'),
    expiredLeases: sum('expiredLeases'),
    retrying: sum('retrying'),
    failed: sum('failed'),
    published: total.count,
    oldestPendingAgeSeconds: first ? Math.max(0, first.age) : null,
    oldestPendingId: first?.id ?? null,
    oldestPendingType: first?.type ?? null,
    latencySeconds: total.latency,
    latencySumSeconds: total.sum,
    throughputPerMinute: round(total.count / minutes),
  }
  if (options.byType) report.byType = [...types.values()].sort((a, b) => a.eventType.localeCompare(b.eventType))
  return report
}

/** the oldest pending row's created_at, a millisecond early (the server may keep microseconds) */
function oldestCreatedAt(db: Db, rows: Record<string, unknown>[]): Date | undefined {
  const times = rows.map((r) => (db.dialect.render.parseTime(r.created_at) as Date).getTime())
  return times.length ? new Date(Math.min(...times) - 1) : undefined
}

function pendingByType({k, names}: OpsContext, now: unknown, from: unknown) {
  const leased = sql<SqlBool>`lease_owner IS NOT NULL`
  const query = k
    .selectFrom(names.outbox)
    .select([
      'event_type',
      sql<number>`COUNT(*)`.as('pending'),
      sql<number>`SUM(CASE WHEN ${leased} AND lease_until > ${now} THEN 1 ELSE 0 END)`.as('in_flight'),
      sql<number>`SUM(CASE WHEN ${leased} AND lease_until <= ${now} THEN 1 ELSE 0 END)`.as('expired'),
      sql<number>`SUM(CASE WHEN lease_owner IS NULL AND attempts > 0 THEN 1 ELSE 0 END)`.as('retrying'),
    ])
    .where(pendingPredicate())
    .groupBy('event_type')
  return from === undefined ? query : query.where('created_at', '>=', from)
}

function failedByType({k, names}: OpsContext) {
  // published_at IS NULL is implied (a failed event is never published) and makes MySQL's
  // claim index (published_at, failed_at, ...) serve this as a range.
  return k
    .selectFrom(names.outbox)
    .select(['event_type', sql<number>`COUNT(*)`.as('failed')])
    .where(sql<SqlBool>`published_at IS NULL AND failed_at IS NOT NULL`)
    .groupBy('event_type')
}

function oldestPending({k, names}: OpsContext, perType: boolean) {
  const base = k.selectFrom(names.outbox).where(pendingPredicate())
  // LIMIT 1 as text, not bound: with no parameter at all, PostgreSQL plans it once per connection
  if (!perType) return base.select(['id', 'event_type', 'created_at']).orderBy('created_at').orderBy('id').limit(sql.lit(1))
  const ranked = base
    .select(['id', 'event_type', 'created_at', sql<number>`ROW_NUMBER() OVER (PARTITION BY event_type ORDER BY created_at, id)`.as('rn')])
    .as('ranked')
  return k.selectFrom(ranked).select(['id', 'event_type', 'created_at']).where('rn', '=', 1).orderBy('created_at').orderBy('id')
}

/**
 * Nearest-rank percentiles in SQL: number the window's latencies in order, keep only the rows
 * at ranks ceil(p * n) and n. Window functions exist on all three (MySQL 8, MariaDB 10.2,
 * SQLite 3.25); integer arithmetic avoids ceil(), which SQLite lacks before 3.44.
 */
function latencyRanks(ctx: OpsContext, windowStart: Expression<unknown>, perType: boolean) {
  const {k, db, names} = ctx
  const latency = sql.raw<number>(db.dialect.batches.secondsBetween('created_at', 'published_at'))
  const partition = perType ? sql`PARTITION BY event_type ` : sql``
  const inner = k
    .selectFrom(names.outbox)
    .select([
      perType ? 'event_type' : sql<string>`''`.as('event_type'),
      latency.as('latency'),
      sql<number>`ROW_NUMBER() OVER (${partition}ORDER BY ${latency})`.as('rn'),
      sql<number>`COUNT(*) OVER (${partition})`.as('cnt'),
      sql<number>`SUM(${latency}) OVER (${partition})`.as('total'),
    ])
    .where('published_at', '>=', windowStart)
    .as('w')
  const atRank = (perMille: number): Expression<SqlBool> =>
    sql<SqlBool>`(rn * 1000 >= ${sql.raw(String(perMille))} * cnt AND (rn - 1) * 1000 < ${sql.raw(String(perMille))} * cnt)`
  return k
    .selectFrom(inner)
    .select(['event_type', 'latency', 'rn', 'cnt', 'total'])
    .where((eb) => eb.or([...Object.values(PERCENTILES).map(atRank), eb('rn', '=', eb.ref('cnt'))]))
}

interface WindowFigures {
  count: number
  sum: number
  latency: LatencySeconds
}

function groupRanks(rows: Record<string, unknown>[]): Map<string, WindowFigures> {
  const out = new Map<string, WindowFigures>()
  for (const r of rows) {
    const type = String(r.event_type)
    let g = out.get(type)
    if (!g) out.set(type, (g = {count: num(r.cnt), sum: Math.max(0, round(num(r.total))), latency: emptyLatency()}))
    const rank = num(r.rn)
    const value = Math.max(0, round(num(r.latency)))
    for (const [name, perMille] of Object.entries(PERCENTILES) as [keyof typeof PERCENTILES, number][]) {
      if (rank * 1000 >= perMille * g.count && (rank - 1) * 1000 < perMille * g.count) g.latency[name] = value
    }
    if (rank === g.count) g.latency.max = value
  }
  return out
}

// Literal, not bound: PostgreSQL and SQLite match the partial pending index only on this text.
export function pendingPredicate() {
  return sql<SqlBool>`published_at IS NULL AND failed_at IS NULL`
}

function emptyLatency(): LatencySeconds {
  return {p50: null, p95: null, p99: null, max: null}
}

function emptyFigures(): StatusFigures {
  return {
    pending: 0,
    inFlight: 0,
    expiredLeases: 0,
    retrying: 0,
    failed: 0,
    published: 0,
    oldestPendingAgeSeconds: null,
    oldestPendingId: null,
    oldestPendingType: null,
    latencySeconds: emptyLatency(),
    latencySumSeconds: 0,
    throughputPerMinute: 0,
  }
}

/** milliseconds precision: SQLite stores no more, and sub-ms latency is noise here */
function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000
}
