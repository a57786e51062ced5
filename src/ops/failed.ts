// `outbox failed`: events that exhausted their attempts, newest failure first, and one event in full.
import {sql, type SqlBool} from 'kysely'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {idForms} from '../core/uuid.js'
import {ALL_COLUMNS, stateOf, toStoredEvent, type EventState, type StoredEvent} from './events.js'
import {databaseNow, num, opsContext, pointInTime} from './query.js'
import {run} from './statements.js'

export interface FailedFilter {
  types?: string[]
  /** failed at or after this instant: a Date, or text (ISO-8601, or a duration meaning ago on the database clock) */
  since?: Date | string
  limit: number
}

export interface FailedList {
  /** all failed events matching the filter (the list holds at most limit of them) */
  total: number
  events: StoredEvent[]
}

export async function listFailed(db: Db, names: TableNames, filter: FailedFilter): Promise<FailedList> {
  const {k} = await opsContext(db, names)
  let q = k.selectFrom(names.outbox).where(sql<SqlBool>`published_at IS NULL AND failed_at IS NOT NULL`)
  if (filter.types?.length) q = q.where('event_type', 'in', filter.types)
  if (filter.since !== undefined) {
    const since = filter.since instanceof Date ? filter.since : await pointInTime(filter.since, 'since', await databaseNow(db))
    q = q.where('failed_at', '>=', db.dialect.render.timeParam(since))
  }
  const [counted, rows] = await Promise.all([
    run(db, q.select(sql<number>`COUNT(*)`.as('n'))),
    run(db, q.select([...ALL_COLUMNS]).orderBy('failed_at', 'desc').orderBy('id').limit(filter.limit)),
  ])
  return {total: num(counted[0]?.n), events: rows.map((r) => toStoredEvent(db.dialect, r))}
}

export interface ShownEvent extends StoredEvent {
  state: EventState
  table: string
  archivedAt?: string | null
}

/** One event by id, from the outbox or else the archive; undefined when neither has it. */
export async function showEvent(db: Db, names: TableNames, id: string, withArchive = true): Promise<ShownEvent | undefined> {
  const {k} = await opsContext(db, names)
  const now = await databaseNow(db)
  const ids = idForms([id])
  const [row] = await run(db, k.selectFrom(names.outbox).select([...ALL_COLUMNS]).where('id', 'in', ids))
  if (row) {
    const event = toStoredEvent(db.dialect, row)
    return {...event, state: stateOf(event, now), table: names.outbox}
  }
  if (!withArchive) return undefined
  const archived = await run(db, k.selectFrom(names.archive).select([...ALL_COLUMNS, 'archived_at']).where('id', 'in', ids))
  if (!archived[0]) return undefined
  const event = toStoredEvent(db.dialect, archived[0])
  return {...event, state: 'archived', table: names.archive, archivedAt: db.dialect.render.parseTime(archived[0].archived_at)?.toISOString() ?? null}
}
