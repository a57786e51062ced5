// mysql: the tables `outbox init` creates, their indexes inside CREATE TABLE (MySQL has no
// CREATE INDEX IF NOT EXISTS), and the information_schema queries that tell which exist.
import {ARCHIVED_AT, EVENT_COLUMN_NAMES, INBOX_COLUMN_NAMES, type EventColumn, type InboxColumn} from '../../src/schema/columns.js'
import {columnLines, idList, indexNames} from '../shared.js'
import type {DdlOptions, DdlPart, DdlStatement, TableNames} from '../dialect.js'
import {sql, type Sql} from '../sql.js'
import {partitionClause, partitioning} from './partitions.js'
import {quoteIdent, table} from './render.js'

const UUID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_bin'

const EVENT_COLUMN_TYPES: Record<EventColumn, string> = {
  id: `${UUID} NOT NULL`,
  event_type: 'VARCHAR(255) NOT NULL',
  aggregate_type: 'VARCHAR(255) NULL',
  aggregate_id: 'VARCHAR(255) NOT NULL',
  aggregate_version: 'BIGINT NULL',
  payload: 'JSON NOT NULL',
  headers: 'JSON NULL',
  created_at: 'DATETIME(6) NOT NULL',
  published_at: 'DATETIME(6) NULL',
  attempts: 'INT NOT NULL DEFAULT 0',
  lease_owner: 'VARCHAR(255) NULL',
  lease_until: 'DATETIME(6) NULL',
  last_error: 'TEXT NULL',
  failed_at: 'DATETIME(6) NULL',
}

const INBOX_COLUMN_TYPES: Record<InboxColumn, string> = {
  consumer: 'VARCHAR(255) NOT NULL',
  event_id: `${UUID} NOT NULL`,
  aggregate_type: 'VARCHAR(255) NULL',
  aggregate_id: 'VARCHAR(255) NULL',
  aggregate_version: 'BIGINT NULL',
  processed_at: 'DATETIME(6) NOT NULL',
}

const EVENT_COLUMNS_DDL = columnLines(EVENT_COLUMN_NAMES, EVENT_COLUMN_TYPES)

// utf8mb4_bin: event types, aggregate ids and consumer names compare byte for byte, as on
// PostgreSQL and SQLite (the default collation folds case and ignores trailing spaces, which
// merged 'Order.Created' into 'order.created ' in status --by type and in --type filters)
const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'

function statements(names: TableNames, options: DdlOptions): DdlStatement[] {
  const ix = indexNames(names)
  const q = quoteIdent
  // MySQL has no CREATE INDEX IF NOT EXISTS, so indexes live inside CREATE TABLE IF NOT EXISTS,
  // and again as repair statements (DdlStatement.repairOnly) for a table found without one.
  // No partial indexes: (published_at, failed_at, ...) makes "IS NULL AND IS NULL" an index
  // prefix, so the claim's ORDER BY created_at, id is read from the index, not sorted.
  const keys = {
    outbox: [[ix.claim, '(published_at, failed_at, created_at, id)'], [ix.createdAt, '(created_at)']],
    inbox: [[ix.inboxAggregate, '(consumer, aggregate_id, aggregate_version)']],
    archive: [[ix.archiveCreatedAt, '(created_at)']],
  } as const
  const inline = (which: keyof typeof keys) => keys[which].map(([name, columns]) => `,\n  KEY ${q(name)} ${columns}`).join('')
  const create = (which: keyof typeof keys, columns: string, primaryKey: string, partitions = ''): DdlStatement => ({
    kind: 'table',
    name: names[which],
    sql: `CREATE TABLE IF NOT EXISTS ${table(names, which)} (\n${columns},\n  PRIMARY KEY ${primaryKey}${inline(which)}\n) ${TABLE_OPTIONS}${partitions};`,
  })
  // partitioned: the partition key must be in the primary key; its partitions come with the table
  const tables = [
    options.partitions
      ? create('outbox', EVENT_COLUMNS_DDL, partitioning.primaryKey, partitionClause(options.partitions))
      : create('outbox', EVENT_COLUMNS_DDL, '(id)'),
  ]
  if (options.inbox) tables.push(create('inbox', columnLines(INBOX_COLUMN_NAMES, INBOX_COLUMN_TYPES), '(consumer, event_id)'))
  if (options.archive) tables.push(create('archive', `${EVENT_COLUMNS_DDL},\n  ${ARCHIVED_AT.name} DATETIME(6) NOT NULL`, '(id)'))
  const repairs = (['outbox', 'inbox', 'archive'] as const)
    .filter((which) => which === 'outbox' || options[which])
    .flatMap((which) =>
      keys[which].map(([name, columns]): DdlStatement => ({kind: 'index', name, table: names[which], repairOnly: true, sql: `CREATE INDEX ${q(name)} ON ${table(names, which)} ${columns};`})),
    )
  return [...tables, ...repairs]
}

function existingColumns(names: TableNames): Sql {
  return sql`SELECT table_name AS table_name, column_name AS column_name FROM information_schema.columns
WHERE table_schema = COALESCE(${names.schema ?? null}, DATABASE()) AND table_name IN (${idList([names.outbox, names.inbox, names.archive])})`
}

function existingObjects(names: TableNames): Sql {
  const schema = names.schema ?? null
  const tables = idList([names.outbox, names.inbox, names.archive])
  return sql`SELECT 'table' AS kind, table_name AS name FROM information_schema.tables
WHERE table_schema = COALESCE(${schema}, DATABASE()) AND table_name IN (${tables})
UNION ALL
SELECT DISTINCT 'index' AS kind, index_name AS name FROM information_schema.statistics
WHERE table_schema = COALESCE(${schema}, DATABASE()) AND table_name IN (${tables}) AND index_name <> 'PRIMARY'`
}

export const ddl: DdlPart = {statements, existingColumns, existingObjects, partitioning}
