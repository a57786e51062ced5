// postgres: the tables and indexes `outbox init` creates (partial indexes, a fillfactor that
// keeps the lease a HOT update), and the catalog queries that tell which exist.
import {ARCHIVED_AT, EVENT_COLUMN_NAMES, INBOX_COLUMN_NAMES, type EventColumn, type InboxColumn} from '../../src/schema/columns.js'
import {columnLines, indexNames} from '../shared.js'
import type {DdlOptions, DdlPart, DdlStatement, TableNames} from '../dialect.js'
import {sql, type Sql} from '../sql.js'
import {createDefault, createRange, defaultPartitionName, partitionName, partitioning, STORAGE} from './partitions.js'
import {quoteIdent, table} from './render.js'

// created_at is the insert's real time, not the transaction's start: a transaction that waited
// for a row lock must not date its event before the one that held the lock.
const EVENT_COLUMN_TYPES: Record<EventColumn, string> = {
  id: 'uuid PRIMARY KEY',
  event_type: 'text NOT NULL',
  aggregate_type: 'text',
  aggregate_id: 'text NOT NULL',
  aggregate_version: 'bigint',
  payload: 'jsonb NOT NULL',
  headers: 'jsonb',
  created_at: 'timestamptz NOT NULL DEFAULT clock_timestamp()',
  published_at: 'timestamptz',
  attempts: 'integer NOT NULL DEFAULT 0',
  lease_owner: 'text',
  lease_until: 'timestamptz',
  last_error: 'text',
  failed_at: 'timestamptz',
}

const INBOX_COLUMN_TYPES: Record<InboxColumn, string> = {
  consumer: 'text NOT NULL',
  event_id: 'uuid NOT NULL',
  aggregate_type: 'text',
  aggregate_id: 'text',
  aggregate_version: 'bigint',
  processed_at: 'timestamptz NOT NULL DEFAULT now()',
}

const EVENT_COLUMNS_DDL = columnLines(EVENT_COLUMN_NAMES, EVENT_COLUMN_TYPES)

/** The outbox table: plain, or partitioned by created_at with its ranges and DEFAULT partition. */
function outboxTable(names: TableNames, options: DdlOptions): DdlStatement[] {
  const outbox = table(names, 'outbox')
  if (!options.partitions) return [{kind: 'table', name: names.outbox, sql: `CREATE TABLE IF NOT EXISTS ${outbox} (\n${EVENT_COLUMNS_DDL}\n) ${STORAGE};`}]
  const columns = columnLines(EVENT_COLUMN_NAMES, {...EVENT_COLUMN_TYPES, id: 'uuid NOT NULL'})
  return [
    {kind: 'table', name: names.outbox, sql: `CREATE TABLE IF NOT EXISTS ${outbox} (\n${columns},\n  PRIMARY KEY ${partitioning.primaryKey}\n) PARTITION BY RANGE (created_at);`},
    ...options.partitions.map((range): DdlStatement => ({kind: 'partition', name: partitionName(names, range.label), table: names.outbox, sql: createRange(names, range)})),
    {kind: 'partition', name: defaultPartitionName(names), table: names.outbox, sql: createDefault(names)},
  ]
}

function statements(names: TableNames, options: DdlOptions): DdlStatement[] {
  const ix = indexNames(names)
  const outbox = table(names, 'outbox')
  const q = quoteIdent
  const out: DdlStatement[] = []
  if (names.schema) out.push({kind: 'schema', name: names.schema, sql: `CREATE SCHEMA IF NOT EXISTS ${q(names.schema)};`})
  out.push(
    ...outboxTable(names, options),
    // Lease columns are in no index, so taking and renewing a lease stays a HOT update.
    {
      kind: 'index',
      name: ix.pending,
      table: names.outbox,
      sql: `CREATE INDEX IF NOT EXISTS ${q(ix.pending)} ON ${outbox} (created_at, id) WHERE published_at IS NULL AND failed_at IS NULL;`,
    },
    {kind: 'index', name: ix.createdAt, table: names.outbox, sql: `CREATE INDEX IF NOT EXISTS ${q(ix.createdAt)} ON ${outbox} (created_at);`},
    {
      kind: 'index',
      name: ix.failed,
      table: names.outbox,
      sql: `CREATE INDEX IF NOT EXISTS ${q(ix.failed)} ON ${outbox} (failed_at) WHERE failed_at IS NOT NULL;`,
    },
    // `outbox status` reads the latency/throughput window by published_at. Marking an event
    // published is never a HOT update anyway (published_at is in the pending index's
    // predicate), so this costs one index entry per mark and nothing on insert (partial).
    {
      kind: 'index',
      name: ix.published,
      table: names.outbox,
      sql: `CREATE INDEX IF NOT EXISTS ${q(ix.published)} ON ${outbox} (published_at) WHERE published_at IS NOT NULL;`,
    },
  )
  if (options.inbox) {
    const inbox = table(names, 'inbox')
    out.push(
      {
        kind: 'table',
        name: names.inbox,
        sql: `CREATE TABLE IF NOT EXISTS ${inbox} (\n${columnLines(INBOX_COLUMN_NAMES, INBOX_COLUMN_TYPES)},\n  PRIMARY KEY (consumer, event_id)\n);`,
      },
      {
        kind: 'index',
        name: ix.inboxAggregate,
        table: names.inbox,
        sql: `CREATE INDEX IF NOT EXISTS ${q(ix.inboxAggregate)} ON ${inbox} (consumer, aggregate_id, aggregate_version);`,
      },
    )
  }
  if (options.archive) {
    const archive = table(names, 'archive')
    out.push(
      {
        kind: 'table',
        name: names.archive,
        sql: `CREATE TABLE IF NOT EXISTS ${archive} (\n${EVENT_COLUMNS_DDL},\n  ${ARCHIVED_AT.name} timestamptz NOT NULL DEFAULT now()\n);`,
      },
      {kind: 'index', name: ix.archiveCreatedAt, table: names.archive, sql: `CREATE INDEX IF NOT EXISTS ${q(ix.archiveCreatedAt)} ON ${archive} (created_at);`},
    )
  }
  return out
}

function existingColumns(names: TableNames): Sql {
  return sql`SELECT table_name::text AS table_name, column_name::text AS column_name FROM information_schema.columns
WHERE table_schema = coalesce(${names.schema ?? null}::text, current_schema()) AND table_name = ANY(${[names.outbox, names.inbox, names.archive]}::text[])`
}

function existingObjects(names: TableNames): Sql {
  const ix = indexNames(names)
  const wanted = [names.outbox, names.inbox, names.archive, ...Object.values(ix)]
  const schema = names.schema ?? null
  return sql`SELECT 'schema' AS kind, nspname AS name FROM pg_namespace WHERE nspname = ${schema}
UNION ALL
SELECT CASE WHEN c.relkind IN ('r', 'p') THEN 'table' ELSE 'index' END AS kind, c.relname AS name
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = coalesce(${schema}::text, current_schema()) AND c.relname = ANY(${wanted}::text[]) AND c.relkind IN ('r', 'p', 'i', 'I')
UNION ALL
SELECT 'partition' AS kind, c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass(${table(names, 'outbox')})`
}

export const ddl: DdlPart = {statements, existingColumns, existingObjects, partitioning}
