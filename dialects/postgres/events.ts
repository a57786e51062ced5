// postgres: the producer's INSERT and the consumer's inbox statements.
import {sameAggregateType, STANDARD_SAVEPOINT} from '../shared.js'
import type {EventsPart, InboxRow, NewEventRow} from '../dialect.js'
import {join, raw, sql} from '../sql.js'
import {table} from './render.js'

export const events: EventsPart = {
  // clock_timestamp(): the insert's own time, not its transaction's start (see ddl.ts)
  insertEvent: (names, row: NewEventRow) =>
    sql`INSERT INTO ${raw(table(names, 'outbox'))} (id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at)
VALUES (${row.id}::uuid, ${row.eventType}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}::bigint, ${row.payload}::jsonb, ${row.headers}::jsonb, clock_timestamp())`,
  inboxInsert: (names, row: InboxRow) =>
    sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version)
VALUES (${row.consumer}, ${row.eventId}::uuid, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}::bigint)
ON CONFLICT (consumer, event_id) DO NOTHING`,
  inboxInsertMany: (names, rows) =>
    sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version)
VALUES ${join(rows.map((row) => sql`(${row.consumer}, ${row.eventId}::uuid, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}::bigint)`))}
ON CONFLICT (consumer, event_id) DO NOTHING
RETURNING event_id`,
  // a uuid's text is lower case, whatever case it was written in
  inboxReturnedId: (sent) => sent.toLowerCase(),
  inboxMaxVersion: (names, consumer, aggregateType, aggregateId) =>
    sql`SELECT max(aggregate_version) AS max_version FROM ${raw(table(names, 'inbox'))}
WHERE consumer = ${consumer} AND aggregate_id = ${aggregateId} AND ${sameAggregateType(aggregateType)}`,
  savepoint: STANDARD_SAVEPOINT,
  // jsonb values are limited to 255 MiB
  maxPayloadBytes: 255 * 1024 * 1024,
}
