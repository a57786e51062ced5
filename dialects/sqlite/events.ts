// sqlite: the producer's INSERT and the consumer's inbox statements.
import {sameAggregateType, STANDARD_SAVEPOINT} from '../shared.js'
import type {EventsPart, InboxRow, NewEventRow} from '../dialect.js'
import {join, raw, sql} from '../sql.js'
import {NOW, table} from './render.js'

export const events: EventsPart = {
  insertEvent: (names, row: NewEventRow) =>
    sql`INSERT INTO ${raw(table(names, 'outbox'))} (id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at)
VALUES (${row.id}, ${row.eventType}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}, ${row.payload}, ${row.headers}, ${raw(NOW)})`,
  inboxInsert: (names, row: InboxRow) =>
    sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version)
VALUES (${row.consumer}, ${row.eventId}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion})
ON CONFLICT (consumer, event_id) DO NOTHING`,
  inboxInsertMany: (names, rows) =>
    sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version)
VALUES ${join(rows.map((row) => sql`(${row.consumer}, ${row.eventId}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion})`))}
ON CONFLICT (consumer, event_id) DO NOTHING
RETURNING event_id`,
  inboxReturnedId: (sent) => sent,
  inboxMaxVersion: (names, consumer, aggregateType, aggregateId) =>
    sql`SELECT max(aggregate_version) AS max_version FROM ${raw(table(names, 'inbox'))}
WHERE consumer = ${consumer} AND aggregate_id = ${aggregateId} AND ${sameAggregateType(aggregateType)}`,
  savepoint: STANDARD_SAVEPOINT,
  // SQLITE_MAX_LENGTH default
  maxPayloadBytes: 1_000_000_000,
}
