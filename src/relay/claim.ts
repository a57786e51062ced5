// Runs the dialect's claim / mark / retry / release statements. The relay, `outbox verify`
// and the tests all go through here, so there is one copy of this SQL: dialects/.
import type {CarriedMark, ClaimOptions, ClaimPlan, CreatedSpan, Dialect, RetryInput, TableNames} from '../../dialects/index.js'
import type {Db, Queryable, Row} from '../db/index.js'
import {toClaimedEvent, type ClaimedEvent} from '../schema/event-row.js'

export type {ClaimedEvent} from '../schema/event-row.js'

export async function claimBatch(db: Db, names: TableNames, options: ClaimOptions): Promise<ClaimedEvent[]> {
  const plan = db.dialect.relay.claim(names, options)
  // One statement runs in autocommit; lock-then-update, or a mark carried as a statement of its
  // own, needs its own transaction. plan.session (READ COMMITTED) is applied once per
  // connection by the MySQL driver.
  if (plan.kind === 'update-returning' && !plan.mark) return onDeadlockRetry(db, () => claimOn(db, db.dialect, plan))
  return onDeadlockRetry(db, () => db.transaction((tx) => claimOn(tx, db.dialect, plan)))
}

/**
 * InnoDB may pick a claim or a mark as a deadlock victim when relays and producers race on
 * the claim index (seen with 8 relays and producers at full speed). The victim was rolled
 * back whole, so running it again is exactly right; only a repeated deadlock surfaces.
 */
async function onDeadlockRetry<T>(db: Db, fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn()
    } catch (error) {
      if (attempt >= attempts || !db.dialect.errors.isDeadlock(error)) throw error
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt))
    }
  }
}

/**
 * Runs a claim plan's statements on `q` (for lock-then-update or a carried mark, a transaction
 * the caller opened and commits). `outbox verify` uses this to hold a claim transaction open.
 */
export async function claimOn(q: Queryable, dialect: Dialect, plan: ClaimPlan): Promise<ClaimedEvent[]> {
  let rows: Row[]
  if (plan.mark) await q.execute(plan.mark, {prepare: dialect.relay.prepareMark})
  if (plan.kind === 'update-returning') {
    rows = await q.query(plan.statement, {prepare: true})
  } else {
    rows = await q.query(plan.lock, {prepare: true})
    if (rows.length > 0) {
      const events = rows.map((row) => toClaimedEvent(dialect, row))
      await q.execute(plan.update(events.map((e) => e.id), createdSpan(events)))
      return events
    }
  }
  // Published in claim order, (created_at, id), to the precision the database keeps: a sort
  // of Dates here had milliseconds, and put two events of one aggregate written within one
  // millisecond in id order. PostgreSQL's claim sorts; MySQL's locking read is in order.
  if (plan.kind === 'update-returning' && !plan.ordered) rows.sort(compareKeys)
  // pushed, not new Array(n): a holey array takes the slow paths of the builtins given it
  const events: ClaimedEvent[] = []
  for (let i = 0; i < rows.length; i++) events.push(toClaimedEvent(dialect, rows[i]))
  return events
}

/**
 * (created_at, id) as the database stores them: SQLite's created_at is fixed-width ISO text.
 * Compared field by field, building nothing: a key string per comparison cost ~0.2-0.4 ms a
 * batch of 100, a fifth of a SQLite claim; text as it came, without String() (a call each).
 */
function compareKeys(a: Row, b: Row): number {
  const x = sortable(a.created_at)
  const y = sortable(b.created_at)
  if (x !== y) return x < y ? -1 : 1
  const i = sortable(a.id)
  const j = sortable(b.id)
  return i < j ? -1 : i > j ? 1 : 0
}

const sortable = (value: unknown): string => (typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : String(value))

/**
 * One UPDATE for a batch's successes; returns how many rows it marked. Given the events (not
 * only their ids), it is bounded by their created_at too, so a partitioned outbox reads only
 * the partitions holding them.
 */
export async function markPublished(db: Db, names: TableNames, events: string[] | Pick<ClaimedEvent, 'id' | 'createdAt'>[]): Promise<number> {
  if (events.length === 0) return 0
  const {ids, createdAt} = carriedMark(events)
  return onDeadlockRetry(db, () => db.execute(db.dialect.relay.markPublished(names, ids, createdAt), {prepare: db.dialect.relay.prepareMark}))
}

/** What markPublished marks, for the next claim to carry instead (ClaimOptions.mark). */
export function carriedMark(events: string[] | Pick<ClaimedEvent, 'id' | 'createdAt'>[]): CarriedMark {
  // plain loops, no intermediate arrays: this runs for every batch. Pushed: JSON.stringify of
  // a holey new Array(n) took its slow path (SQLite binds the ids as one JSON text)
  const ids: string[] = []
  for (let i = 0; i < events.length; i++) {
    const e = events[i]
    ids.push(typeof e === 'string' ? e : e.id)
  }
  return {ids, createdAt: createdSpan(events)}
}

/**
 * The events' created_at span, a millisecond wider on each side: the Dates hold milliseconds,
 * the columns microseconds. None for ids alone, or for a time that is not one (then the
 * statements go by id alone).
 */
function createdSpan(events: readonly (string | Pick<ClaimedEvent, 'createdAt'>)[]): CreatedSpan | undefined {
  let min = Infinity
  let max = -Infinity
  for (let i = 0; i < events.length; i++) {
    const e = events[i]
    if (typeof e === 'string') continue
    const t = e.createdAt.getTime()
    if (Number.isNaN(t)) return undefined
    if (t < min) min = t
    if (t > max) max = t
  }
  return min > max ? undefined : {from: new Date(min - 1), to: new Date(max + 1)}
}

/** Releases with backoff, or fails the event once it reached maxAttempts. False when the lease was lost. */
export async function retryEvent(db: Db, names: TableNames, input: RetryInput): Promise<boolean> {
  return (await onDeadlockRetry(db, () => db.execute(db.dialect.relay.retry(names, input), {prepare: true}))) > 0
}

export async function releaseLeases(db: Db, names: TableNames, ids: string[], owner: string): Promise<number> {
  if (ids.length === 0) return 0
  return onDeadlockRetry(db, () => db.execute(db.dialect.relay.release(names, ids, owner)))
}
