// mysql: the producer's INSERT and the consumer's inbox statements.
import {sameAggregateType, STANDARD_SAVEPOINT} from '../shared.js'
import type {EventsPart, InboxRow, NewEventRow} from '../dialect.js'
import {join, raw, sql} from '../sql.js'
import {NOW, table} from './render.js'

export const events: EventsPart = {
  insertEvent: (names, row: NewEventRow) =>
    sql`INSERT INTO ${raw(table(names, 'outbox'))} (id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at)
VALUES (${row.id}, ${row.eventType}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}, ${row.payload}, ${row.headers}, ${raw(NOW)})`,
  // A plain INSERT: a duplicate raises ER_DUP_ENTRY, which undoes the statement only, and the
  // consumer counts it as a duplicate. Not ON DUPLICATE KEY UPDATE: on a connection with
  // CLIENT_FOUND_ROWS (mysql2's default, so an app's own pool) it counts 1 for a duplicate, as
  // for a new row. Not INSERT IGNORE: that would also turn real errors (bad values) into warnings.
  inboxInsert: (names, row: InboxRow) =>
    sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, processed_at)
VALUES (${row.consumer}, ${row.eventId}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}, ${raw(NOW)})`,
  // the same plain INSERT for a batch: one duplicate raises and undoes the whole statement (no
  // RETURNING on MySQL, so no inboxReturnedId: the consumer takes a savepoint per event then)
  inboxInsertMany: (names, rows) =>
    sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, processed_at)
VALUES ${join(rows.map((row) => sql`(${row.consumer}, ${row.eventId}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}, ${raw(NOW)})`))}`,
  inboxMaxVersion: (names, consumer, aggregateType, aggregateId) =>
    sql`SELECT MAX(aggregate_version) AS max_version FROM ${raw(table(names, 'inbox'))}
WHERE consumer = ${consumer} AND aggregate_id = ${aggregateId} AND ${sameAggregateType(aggregateType)}`,
  savepoint: STANDARD_SAVEPOINT,
  // a statement must fit max_allowed_packet: 16 MiB by default on MariaDB (64 MiB on MySQL 8)
  maxPayloadBytes: 16 * 1024 * 1024 - 64 * 1024,
}
