// sqlite: the tables and partial indexes `outbox init` creates, and the sqlite_master queries
// that tell which exist. JSON columns are TEXT checked with json_valid.
import {ARCHIVED_AT, EVENT_COLUMN_NAMES, INBOX_COLUMN_NAMES, type EventColumn, type InboxColumn} from '../../src/schema/columns.js'
import {columnLines, indexNames} from '../shared.js'
import type {DdlOptions, DdlPart, DdlStatement, TableNames} from '../dialect.js'
import {sql} from '../sql.js'
import {NOW, quoteIdent, table} from './render.js'

const EVENT_COLUMN_TYPES: Record<EventColumn, string> = {
  id: 'TEXT NOT NULL PRIMARY KEY',
  event_type: 'TEXT NOT NULL',
  aggregate_type: 'TEXT',
  aggregate_id: 'TEXT NOT NULL',
  aggregate_version: 'INTEGER',
  payload: 'TEXT NOT NULL CHECK (json_valid(payload))',
  headers: 'TEXT CHECK (headers IS NULL OR json_valid(headers))',
  created_at: `TEXT NOT NULL DEFAULT (${NOW})`,
  published_at: 'TEXT',
  attempts: 'INTEGER NOT NULL DEFAULT 0',
  lease_owner: 'TEXT',
  lease_until: 'TEXT',
  last_error: 'TEXT',
  failed_at: 'TEXT',
}

const INBOX_COLUMN_TYPES: Record<InboxColumn, string> = {
  consumer: 'TEXT NOT NULL',
  event_id: 'TEXT NOT NULL',
  aggregate_type: 'TEXT',
  aggregate_id: 'TEXT',
  aggregate_version: 'INTEGER',
  processed_at: `TEXT NOT NULL DEFAULT (${NOW})`,
}

const EVENT_COLUMNS_DDL = columnLines(EVENT_COLUMN_NAMES, EVENT_COLUMN_TYPES)

function statements(names: TableNames, options: DdlOptions): DdlStatement[] {
  const ix = indexNames(names)
  const q = quoteIdent
  const outbox = table(names, 'outbox')
  const out: DdlStatement[] = [
    {kind: 'table', name: names.outbox, sql: `CREATE TABLE IF NOT EXISTS ${outbox} (\n${EVENT_COLUMNS_DDL}\n);`},
    {
      kind: 'index',
      name: ix.pending,
      table: names.outbox,
      sql: `CREATE INDEX IF NOT EXISTS ${q(ix.pending)} ON ${q(names.outbox)} (created_at, id) WHERE published_at IS NULL AND failed_at IS NULL;`,
    },
    {kind: 'index', name: ix.createdAt, table: names.outbox, sql: `CREATE INDEX IF NOT EXISTS ${q(ix.createdAt)} ON ${q(names.outbox)} (created_at);`},
    {
      kind: 'index',
      name: ix.failed,
      table: names.outbox,
      sql: `CREATE INDEX IF NOT EXISTS ${q(ix.failed)} ON ${q(names.outbox)} (failed_at) WHERE failed_at IS NOT NULL;`,
    },
    // `outbox status` reads its latency/throughput window by published_at; partial, so
    // inserts do not touch it (one entry per mark).
    {
      kind: 'index',
      name: ix.published,
      table: names.outbox,
      sql: `CREATE INDEX IF NOT EXISTS ${q(ix.published)} ON ${q(names.outbox)} (published_at) WHERE published_at IS NOT NULL;`,
    },
  ]
  if (options.inbox) {
    out.push(
      {
        kind: 'table',
        name: names.inbox,
        sql: `CREATE TABLE IF NOT EXISTS ${table(names, 'inbox')} (\n${columnLines(INBOX_COLUMN_NAMES, INBOX_COLUMN_TYPES)},\n  PRIMARY KEY (consumer, event_id)\n);`,
      },
      {
        kind: 'index',
        name: ix.inboxAggregate,
        table: names.inbox,
        sql: `CREATE INDEX IF NOT EXISTS ${q(ix.inboxAggregate)} ON ${q(names.inbox)} (consumer, aggregate_id, aggregate_version);`,
      },
    )
  }
  if (options.archive) {
    out.push(
      {
        kind: 'table',
        name: names.archive,
        sql: `CREATE TABLE IF NOT EXISTS ${table(names, 'archive')} (\n${EVENT_COLUMNS_DDL},\n  ${ARCHIVED_AT.name} TEXT NOT NULL DEFAULT (${NOW})\n);`,
      },
      {
        kind: 'index',
        name: ix.archiveCreatedAt,
        table: names.archive,
        sql: `CREATE INDEX IF NOT EXISTS ${q(ix.archiveCreatedAt)} ON ${q(names.archive)} (created_at);`,
      },
    )
  }
  return out
}

export const ddl: DdlPart = {
  statements,
  existingColumns: (names) => {
    const wanted = JSON.stringify([names.outbox, names.inbox, names.archive])
    return sql`SELECT m.name AS table_name, c.name AS column_name FROM sqlite_master m, pragma_table_info(m.name) c
WHERE m.type = 'table' AND m.name IN (SELECT value FROM json_each(${wanted}))`
  },
  existingObjects: (names) => {
    const wanted = JSON.stringify([names.outbox, names.inbox, names.archive, ...Object.values(indexNames(names))])
    return sql`SELECT type AS kind, name FROM sqlite_master WHERE type IN ('table', 'index') AND name IN (SELECT value FROM json_each(${wanted}))`
  },
}
