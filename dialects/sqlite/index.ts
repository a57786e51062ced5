// SQLite 3.35+: one writer at a time and no row locks, so the claim is a single
// UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING, which is atomic on its own.
// Times are ISO-8601 UTC text with milliseconds, which sorts and compares as text.
import {batchLimit, claimablePredicate, commonLiteral, indexNames, orderingPredicate, quoteString, sameAggregateType} from '../shared.js'
import type {ClaimOptions, Dialect, DdlOptions, DdlStatement, InboxRow, NewEventRow, RetryInput, TableNames} from '../dialect.js'
import {compile, inline, raw, sql, type Sql} from '../sql.js'
import {batches} from './batches.js'
import {NOW, quoteIdent, table, literal, addMs} from './render.js'

const RETURNED = 'id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at, attempts'

const EVENT_COLUMNS_DDL = `  id TEXT NOT NULL PRIMARY KEY,
  event_type TEXT NOT NULL,
  aggregate_type TEXT,
  aggregate_id TEXT NOT NULL,
  aggregate_version INTEGER,
  payload TEXT NOT NULL CHECK (json_valid(payload)),
  headers TEXT CHECK (headers IS NULL OR json_valid(headers)),
  created_at TEXT NOT NULL DEFAULT (${NOW}),
  published_at TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_until TEXT,
  last_error TEXT,
  failed_at TEXT`

function ddl(names: TableNames, options: DdlOptions): DdlStatement[] {
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
        sql: `CREATE TABLE IF NOT EXISTS ${table(names, 'inbox')} (
  consumer TEXT NOT NULL,
  event_id TEXT NOT NULL,
  aggregate_type TEXT,
  aggregate_id TEXT,
  aggregate_version INTEGER,
  processed_at TEXT NOT NULL DEFAULT (${NOW}),
  PRIMARY KEY (consumer, event_id)
);`,
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
        sql: `CREATE TABLE IF NOT EXISTS ${table(names, 'archive')} (\n${EVENT_COLUMNS_DDL},\n  archived_at TEXT NOT NULL DEFAULT (${NOW})\n);`,
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

function claimStatement(names: TableNames, options: ClaimOptions): Sql {
  const outbox = table(names, 'outbox')
  return sql`UPDATE ${raw(outbox)}
SET lease_owner = ${options.owner}, lease_until = ${addMs(options.leaseMs)}, attempts = attempts + 1
WHERE id IN (
  SELECT e.id FROM ${raw(outbox)} e
  WHERE ${claimablePredicate(NOW, 'e')}${orderingPredicate(outbox, options, 'e')}
  ORDER BY e.created_at, e.id
  LIMIT ${batchLimit(options)}
)
RETURNING ${raw(RETURNED)}`
}

/** One bound JSON array instead of n placeholders: the statement text (and cache entry) stays the same. */
function idsJson(ids: readonly string[]): string {
  return JSON.stringify(ids)
}

export const sqlite: Dialect = {
  name: 'sqlite',
  batches,
  render: {
    maxIdentifierLength: 128,
    quoteIdent,
    table,
    placeholder: () => '?',
    literal,
    compile: (fragment) => compile(fragment, () => '?'),
    inline: (fragment) => inline(fragment, literal),
    now: NOW,
    timeParam: (date) => date.toISOString(),
    parseTime: (value) => (value == null ? null : new Date(String(value))),
  },
  ddl: {
    statements: ddl,
    existingColumns: (names) => {
      const wanted = JSON.stringify([names.outbox, names.inbox, names.archive])
      return sql`SELECT m.name AS table_name, c.name AS column_name FROM sqlite_master m, pragma_table_info(m.name) c
WHERE m.type = 'table' AND m.name IN (SELECT value FROM json_each(${wanted}))`
    },
    existingObjects: (names) => {
      const wanted = JSON.stringify([names.outbox, names.inbox, names.archive, ...Object.values(indexNames(names))])
      return sql`SELECT type AS kind, name FROM sqlite_master WHERE type IN ('table', 'index') AND name IN (SELECT value FROM json_each(${wanted}))`
    },
  },
  relay: {
    claim: (names, options) => ({kind: 'update-returning', statement: claimStatement(names, options), ordered: false}),
    // RETURNING order is arbitrary in SQLite; the relay sorts on the client.
    claimScript: (names, options) => `${inline(claimStatement(names, options), literal)};`,
    markPublished: (names, ids) =>
      sql`UPDATE ${raw(table(names, 'outbox'))} SET published_at = ${raw(NOW)}, lease_owner = NULL, lease_until = NULL, failed_at = NULL
WHERE id IN (SELECT value FROM json_each(${idsJson(ids)})) AND published_at IS NULL`,
    retry: (names, r: RetryInput) =>
      sql`UPDATE ${raw(table(names, 'outbox'))}
SET lease_owner = NULL, lease_until = ${addMs(r.delayMs)}, last_error = ${r.error},
  ${r.refund ? raw('attempts = max(attempts - 1, 0), failed_at = NULL') : sql`failed_at = CASE WHEN attempts >= ${r.maxAttempts} THEN ${raw(NOW)} ELSE NULL END`}
WHERE id = ${r.id} AND lease_owner = ${r.owner} AND published_at IS NULL`,
    release: (names, ids, owner) =>
      sql`UPDATE ${raw(table(names, 'outbox'))} SET lease_owner = NULL, lease_until = NULL, attempts = max(attempts - 1, 0)
WHERE id IN (SELECT value FROM json_each(${idsJson(ids)})) AND lease_owner = ${owner} AND published_at IS NULL`,
  },
  events: {
    insertEvent: (names, row: NewEventRow) =>
      sql`INSERT INTO ${raw(table(names, 'outbox'))} (id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at)
VALUES (${row.id}, ${row.eventType}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}, ${row.payload}, ${row.headers}, ${raw(NOW)})`,
    inboxInsert: (names, row: InboxRow) =>
      sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version)
VALUES (${row.consumer}, ${row.eventId}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion})
ON CONFLICT (consumer, event_id) DO NOTHING`,
    inboxMaxVersion: (names, consumer, aggregateType, aggregateId) =>
      sql`SELECT max(aggregate_version) AS max_version FROM ${raw(table(names, 'inbox'))}
WHERE consumer = ${consumer} AND aggregate_id = ${aggregateId} AND ${sameAggregateType(aggregateType)}`,
  },
  verify: {
    serverVersion: () => sql`SELECT sqlite_version() AS version`,
    supportsSkipLocked: () => false,
    // No row locks: one writer at a time, and the claim is one UPDATE ... RETURNING (3.35+).
    claimSupport: (version) => {
      const [major, minor] = version.split('.').map(Number)
      const ok = major > 3 || (major === 3 && minor >= 35)
      return ok
        ? {ok, detail: `SQLite ${version}: no SKIP LOCKED (not needed: one writer at a time); UPDATE ... RETURNING supported (3.35+)`}
        : {ok, detail: `SQLite ${version} has no UPDATE ... RETURNING (needs 3.35+). Upgrade better-sqlite3`}
    },
    lockTimeout: () => undefined,
    isolationLevel: () => undefined,
    explain: (statement) => sql`EXPLAIN QUERY PLAN ${statement}`,
    analyze: (names) => sql`ANALYZE ${raw(table(names, 'outbox'))}`,
    dropOutbox: (names) => sql`DROP TABLE IF EXISTS ${raw(table(names, 'outbox'))}`,
  },
  errors: {
    isLockTimeout: (error) => /^SQLITE_BUSY/.test(String((error as {code?: string})?.code ?? '')),
    isDeadlock: () => false,
    isDuplicateKey: (error) => (error as {code?: string})?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY',
  },
}
