// MySQL 8.0.1+ and MariaDB 10.6+: SKIP LOCKED only on SELECT, no UPDATE ... RETURNING, no
// same-table subquery in UPDATE. So the claim is two statements in one READ COMMITTED
// transaction: lock the ids with SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE by id.
import {batchLimit, claimablePredicate, commonLiteral, idList, indexNames, orderingPredicate, quoteString, sameAggregateType} from '../shared.js'
import type {ClaimOptions, Dialect, DdlOptions, DdlStatement, InboxRow, NewEventRow, RetryInput, TableNames} from '../dialect.js'
import {compile, inline, raw, sql, type Sql} from '../sql.js'
import {batches} from './batches.js'
import {NOW, exactTime, quoteIdent, table, datetime, literal, addMs} from './render.js'

const SELECTED =
  'e.id, e.event_type, e.aggregate_type, e.aggregate_id, e.aggregate_version, CAST(e.payload AS CHAR) AS payload, CAST(e.headers AS CHAR) AS headers, e.created_at, e.attempts + 1 AS attempts'

export const READ_COMMITTED = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'

const EVENT_COLUMNS_DDL = `  id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  event_type VARCHAR(255) NOT NULL,
  aggregate_type VARCHAR(255) NULL,
  aggregate_id VARCHAR(255) NOT NULL,
  aggregate_version BIGINT NULL,
  payload JSON NOT NULL,
  headers JSON NULL,
  created_at DATETIME(6) NOT NULL,
  published_at DATETIME(6) NULL,
  attempts INT NOT NULL DEFAULT 0,
  lease_owner VARCHAR(255) NULL,
  lease_until DATETIME(6) NULL,
  last_error TEXT NULL,
  failed_at DATETIME(6) NULL`

// utf8mb4_bin: event types, aggregate ids and consumer names compare byte for byte, as on
// PostgreSQL and SQLite (the default collation folds case and ignores trailing spaces, which
// merged 'Order.Created' into 'order.created ' in status --by type and in --type filters)
const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin'

function ddl(names: TableNames, options: DdlOptions): DdlStatement[] {
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
  const tables: DdlStatement[] = [
    {
      kind: 'table',
      name: names.outbox,
      sql: `CREATE TABLE IF NOT EXISTS ${table(names, 'outbox')} (
${EVENT_COLUMNS_DDL},
  PRIMARY KEY (id)${inline('outbox')}
) ${TABLE_OPTIONS};`,
    },
  ]
  if (options.inbox) {
    tables.push({
      kind: 'table',
      name: names.inbox,
      sql: `CREATE TABLE IF NOT EXISTS ${table(names, 'inbox')} (
  consumer VARCHAR(255) NOT NULL,
  event_id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  aggregate_type VARCHAR(255) NULL,
  aggregate_id VARCHAR(255) NULL,
  aggregate_version BIGINT NULL,
  processed_at DATETIME(6) NOT NULL,
  PRIMARY KEY (consumer, event_id)${inline('inbox')}
) ${TABLE_OPTIONS};`,
    })
  }
  if (options.archive) {
    tables.push({
      kind: 'table',
      name: names.archive,
      sql: `CREATE TABLE IF NOT EXISTS ${table(names, 'archive')} (
${EVENT_COLUMNS_DDL},
  archived_at DATETIME(6) NOT NULL,
  PRIMARY KEY (id)${inline('archive')}
) ${TABLE_OPTIONS};`,
    })
  }
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

// FORCE INDEX: on a small table (a new deployment, verify's scratch table after a purge) MariaDB
// may read the pending rows by a table scan and sort them, which locks every pending row, not
// the batch, and a second relay gets nothing (verify's second-session check caught it about one
// run in five). Through the claim index the ORDER BY needs no sort and the LIMIT ends the scan.
function lockStatement(names: TableNames, options: ClaimOptions, columns: string): Sql {
  const outbox = table(names, 'outbox')
  return sql`SELECT ${raw(columns)} FROM ${raw(outbox)} e FORCE INDEX (${raw(quoteIdent(indexNames(names).claim))})
WHERE ${claimablePredicate(NOW, 'e')}${orderingPredicate(outbox, options, 'e')}
ORDER BY e.created_at, e.id
LIMIT ${batchLimit(options)}
FOR UPDATE SKIP LOCKED`
}

function leaseSet(options: ClaimOptions): Sql {
  return sql`SET lease_owner = ${options.owner}, lease_until = ${addMs(options.leaseMs)}, attempts = attempts + 1`
}

/**
 * The same two statements as a client script: the locked ids go through a temporary table
 * (CREATE TEMPORARY TABLE does not end the transaction), so it runs unchanged in `mariadb`
 * or `mysql` and skips, rather than waits on, rows another session holds.
 */
function claimScript(names: TableNames, options: ClaimOptions): string {
  const outbox = table(names, 'outbox')
  const lock = inline(lockStatement(names, options, 'e.id'), literal)
  const update = inline(sql`UPDATE ${raw(outbox)} ${leaseSet(options)} WHERE id IN (SELECT id FROM outbox_claim_ids)`, literal)
  return `${READ_COMMITTED};
CREATE TEMPORARY TABLE IF NOT EXISTS outbox_claim_ids (id CHAR(36) CHARACTER SET ascii COLLATE ascii_bin PRIMARY KEY);
DELETE FROM outbox_claim_ids;
START TRANSACTION;
INSERT INTO outbox_claim_ids (id)
${lock};
${update};
COMMIT;
SELECT e.id, e.event_type, e.aggregate_type, e.aggregate_id, e.aggregate_version, e.payload, e.headers, e.created_at, e.attempts
FROM ${outbox} e JOIN outbox_claim_ids c ON c.id = e.id ORDER BY e.created_at, e.id;`
}

export const mysql: Dialect = {
  name: 'mysql',
  namedLock: {take: (key, waitSeconds) => sql`SELECT GET_LOCK(${key}, ${waitSeconds}) AS got`, release: (key) => sql`SELECT RELEASE_LOCK(${key}) AS released`},
  batches,
  render: {
    maxIdentifierLength: 64,
    quoteIdent,
    table,
    placeholder: () => '?',
    literal,
    compile: (fragment) => compile(fragment, () => '?'),
    inline: (fragment) => inline(fragment, literal),
    now: NOW,
    timeParam: datetime,
    parseTime: (value) => {
      if (value == null) return null
      if (value instanceof Date) return value
      return new Date(`${String(value).replace(' ', 'T')}Z`)
    },
  },
  ddl: {
    statements: ddl,
    existingObjects,
    existingColumns,
  },
  relay: {
    claim: (names, options) => ({
      kind: 'lock-then-update',
      session: [sql`${raw(READ_COMMITTED)}`],
      lock: lockStatement(names, options, SELECTED),
      update: (ids) => sql`UPDATE ${raw(table(names, 'outbox'))} ${leaseSet(options)} WHERE id IN (${idList(ids)})`,
    }),
    claimScript,
    markPublished: (names, ids) =>
      sql`UPDATE ${raw(table(names, 'outbox'))} SET published_at = ${raw(NOW)}, lease_owner = NULL, lease_until = NULL, failed_at = NULL
WHERE id IN (${idList(ids)}) AND published_at IS NULL`,
    retry: (names, r: RetryInput) =>
      sql`UPDATE ${raw(table(names, 'outbox'))}
SET lease_owner = NULL, lease_until = ${addMs(r.delayMs)}, last_error = ${r.error},
  ${r.refund ? raw('attempts = GREATEST(attempts - 1, 0), failed_at = NULL') : sql`failed_at = CASE WHEN attempts >= ${r.maxAttempts} THEN ${raw(NOW)} ELSE NULL END`}
WHERE id = ${r.id} AND lease_owner = ${r.owner} AND published_at IS NULL`,
    release: (names, ids, owner) =>
      sql`UPDATE ${raw(table(names, 'outbox'))} SET lease_owner = NULL, lease_until = NULL, attempts = GREATEST(attempts - 1, 0)
WHERE id IN (${idList(ids)}) AND lease_owner = ${owner} AND published_at IS NULL`,
  },
  events: {
    insertEvent: (names, row: NewEventRow) =>
      sql`INSERT INTO ${raw(table(names, 'outbox'))} (id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at)
VALUES (${row.id}, ${row.eventType}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}, ${row.payload}, ${row.headers}, ${raw(NOW)})`,
    // Not INSERT IGNORE: that would also turn real errors (bad values) into warnings.
    inboxInsert: (names, row: InboxRow) =>
      sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, processed_at)
VALUES (${row.consumer}, ${row.eventId}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}, ${raw(NOW)})
ON DUPLICATE KEY UPDATE event_id = event_id`,
    inboxMaxVersion: (names, consumer, aggregateType, aggregateId) =>
      sql`SELECT MAX(aggregate_version) AS max_version FROM ${raw(table(names, 'inbox'))}
WHERE consumer = ${consumer} AND aggregate_id = ${aggregateId} AND ${sameAggregateType(aggregateType)}`,
  },
  verify: {
    serverVersion: () => sql`SELECT VERSION() AS version`,
    supportsSkipLocked,
    claimSupport: (version) => {
      const product = isMariaDb(version) ? 'MariaDB' : 'MySQL'
      const needs = isMariaDb(version) ? '10.6+' : '8.0.1+'
      return supportsSkipLocked(version)
        ? {ok: true, detail: `${product} ${version}: SELECT ... FOR UPDATE SKIP LOCKED supported (${needs})`}
        : {
            ok: false,
            detail: `${product} ${version} has no SKIP LOCKED (needs ${needs}): concurrent relays would wait on each other's rows or claim nothing. Upgrade the server`,
          }
    },
    // Whole seconds, at least 1: the variable takes no fractions.
    lockTimeout: (ms) => sql`SET SESSION innodb_lock_wait_timeout = ${raw(String(Math.max(1, Math.ceil(ms / 1000))))}`,
    // MySQL 8 removed tx_isolation; MariaDB 10.11 has only tx_isolation.
    isolationLevel: (version) => sql`SELECT ${raw(isMariaDb(version) ? '@@tx_isolation' : '@@transaction_isolation')} AS level`,
    explain: (statement) => sql`EXPLAIN ${statement}`,
    // MariaDB's; MySQL 8's EXPLAIN ANALYZE prints a text tree instead
    analyzeRows: {
      statement: (statement) => sql`ANALYZE FORMAT=JSON ${statement}`,
      rowsRead: (result, name) => {
        let rows = 0
        const text = String(Object.values(result[0] ?? {})[0] ?? '{}')
        JSON.parse(text, (_key, value) => {
          if (value?.table_name === name) rows += Number(value.r_rows ?? 0) * Number(value.r_loops ?? 0)
          return value
        })
        return rows
      },
    },
    analyze: (names) => sql`ANALYZE TABLE ${raw(table(names, 'outbox'))}`,
    dropOutbox: (names) => sql`DROP TABLE IF EXISTS ${raw(table(names, 'outbox'))}`,
  },
  errors: {
    isLockTimeout: (error) => (error as {errno?: number})?.errno === 1205,
    isDeadlock: (error) => (error as {errno?: number})?.errno === 1213,
    isDuplicateKey: (error) => (error as {errno?: number})?.errno === 1062,
  },
}

function isMariaDb(version: string): boolean {
  return /mariadb/i.test(version)
}

function supportsSkipLocked(version: string): boolean {
  const [major, minor, patch] = version.split(/[.-]/).map(Number)
  if (isMariaDb(version)) return major > 10 || (major === 10 && minor >= 6)
  return major > 8 || (major === 8 && (minor > 0 || patch >= 1))
}
