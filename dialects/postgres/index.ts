// PostgreSQL 9.5+: FOR UPDATE SKIP LOCKED in a MATERIALIZED CTE, partial pending index.
import {batchLimit, claimablePredicate, commonLiteral, indexNames, orderingPredicate, quoteString, sameAggregateType} from '../shared.js'
import type {ClaimOptions, Dialect, DdlOptions, DdlStatement, InboxRow, NewEventRow, RetryInput, TableNames} from '../dialect.js'
import {compile, inline, raw, sql, type Sql} from '../sql.js'
import {batches} from './batches.js'
import {NOW, quoteIdent, table, literal, msInterval, exactUtc} from './render.js'

// created_at is the insert's real time, not the transaction's start: a transaction that waited
// for a row lock must not date its event before the one that held the lock.
const RETURNED =
  't.id, t.event_type, t.aggregate_type, t.aggregate_id, t.aggregate_version, t.payload::text AS payload, t.headers::text AS headers, t.created_at, t.attempts'

// High churn: leases are HOT updates only if the page has room, and dead tuples pile up fast.
const STORAGE = 'WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)'

const EVENT_COLUMNS_DDL = `  id uuid PRIMARY KEY,
  event_type text NOT NULL,
  aggregate_type text,
  aggregate_id text NOT NULL,
  aggregate_version bigint,
  payload jsonb NOT NULL,
  headers jsonb,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  published_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_until timestamptz,
  last_error text,
  failed_at timestamptz`

function ddl(names: TableNames, options: DdlOptions): DdlStatement[] {
  const ix = indexNames(names)
  const outbox = table(names, 'outbox')
  const q = quoteIdent
  const out: DdlStatement[] = []
  if (names.schema) out.push({kind: 'schema', name: names.schema, sql: `CREATE SCHEMA IF NOT EXISTS ${q(names.schema)};`})
  out.push(
    {kind: 'table', name: names.outbox, sql: `CREATE TABLE IF NOT EXISTS ${outbox} (\n${EVENT_COLUMNS_DDL}\n) ${STORAGE};`},
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
        sql: `CREATE TABLE IF NOT EXISTS ${inbox} (
  consumer text NOT NULL,
  event_id uuid NOT NULL,
  aggregate_type text,
  aggregate_id text,
  aggregate_version bigint,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);`,
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
        sql: `CREATE TABLE IF NOT EXISTS ${archive} (\n${EVENT_COLUMNS_DDL},\n  archived_at timestamptz NOT NULL DEFAULT now()\n);`,
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
WHERE n.nspname = coalesce(${schema}::text, current_schema()) AND c.relname = ANY(${wanted}::text[]) AND c.relkind IN ('r', 'p', 'i', 'I')`
}

function claimStatement(names: TableNames, options: ClaimOptions): Sql {
  const outbox = table(names, 'outbox')
  // MATERIALIZED: the locked, limited set is computed once. An IN (SELECT ... LIMIT ...
  // FOR UPDATE SKIP LOCKED) may be re-evaluated per outer row and claim more than LIMIT
  // (PostgreSQL BUG #15715). RETURNING has no order: the rows come back sorted by the database,
  // to the microsecond, in the order the relay publishes them (a client sort had milliseconds).
  return sql`WITH c AS MATERIALIZED (
  SELECT e.id FROM ${raw(outbox)} e
  WHERE ${claimablePredicate(NOW, 'e')}${orderingPredicate(outbox, options, 'e')}
  ORDER BY e.created_at, e.id
  LIMIT ${batchLimit(options)}
  FOR UPDATE SKIP LOCKED
), leased AS (
UPDATE ${raw(outbox)} AS t
SET lease_owner = ${options.owner}, lease_until = ${raw(NOW)} + ${msInterval(options.leaseMs)}, attempts = t.attempts + 1
FROM c WHERE t.id = c.id
RETURNING ${raw(RETURNED)}
)
SELECT * FROM leased ORDER BY created_at, id`
}

export const postgres: Dialect = {
  name: 'postgres',
  // waits as long as the session's lock_timeout allows; released by the transaction's end
  namedLock: {take: (key) => sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0)) AS got_lock`},
  batches,
  render: {
    maxIdentifierLength: 63,
    quoteIdent,
    table,
    placeholder: (i) => `$${i}`,
    literal,
    compile: (fragment) => compile(fragment, (i) => `$${i}`),
    inline: (fragment) => inline(fragment, literal),
    now: NOW,
    timeParam: (date) => date.toISOString(),
    parseTime: (value) => (value == null ? null : value instanceof Date ? value : new Date(String(value))),
  },
  ddl: {
    statements: ddl,
    existingObjects,
    existingColumns,
  },
  relay: {
    claim: (names, options) => ({kind: 'update-returning', statement: claimStatement(names, options), ordered: true}),
    claimScript: (names, options) => `${inline(claimStatement(names, options), literal)};`,
    markPublished: (names, ids) =>
      sql`UPDATE ${raw(table(names, 'outbox'))} SET published_at = ${raw(NOW)}, lease_owner = NULL, lease_until = NULL, failed_at = NULL
WHERE id = ANY(${ids}::uuid[]) AND published_at IS NULL`,
    retry: (names, r: RetryInput) =>
      sql`UPDATE ${raw(table(names, 'outbox'))}
SET lease_owner = NULL, lease_until = ${raw(NOW)} + ${msInterval(r.delayMs)}, last_error = ${r.error},
  ${r.refund ? raw('attempts = greatest(attempts - 1, 0), failed_at = NULL') : sql`failed_at = CASE WHEN attempts >= ${r.maxAttempts}::integer THEN ${raw(NOW)} ELSE NULL END`}
WHERE id = ${r.id}::uuid AND lease_owner = ${r.owner} AND published_at IS NULL`,
    release: (names, ids, owner) =>
      sql`UPDATE ${raw(table(names, 'outbox'))} SET lease_owner = NULL, lease_until = NULL, attempts = greatest(attempts - 1, 0)
WHERE id = ANY(${ids}::uuid[]) AND lease_owner = ${owner} AND published_at IS NULL`,
    notify: (channel) => sql`SELECT pg_notify(${channel}, '')`,
    listen: (channel) => sql`LISTEN ${raw(quoteIdent(channel))}`,
  },
  events: {
    insertEvent: (names, row: NewEventRow) =>
      sql`INSERT INTO ${raw(table(names, 'outbox'))} (id, event_type, aggregate_type, aggregate_id, aggregate_version, payload, headers, created_at)
VALUES (${row.id}::uuid, ${row.eventType}, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}::bigint, ${row.payload}::jsonb, ${row.headers}::jsonb, clock_timestamp())`,
    inboxInsert: (names, row: InboxRow) =>
      sql`INSERT INTO ${raw(table(names, 'inbox'))} (consumer, event_id, aggregate_type, aggregate_id, aggregate_version)
VALUES (${row.consumer}, ${row.eventId}::uuid, ${row.aggregateType}, ${row.aggregateId}, ${row.aggregateVersion}::bigint)
ON CONFLICT (consumer, event_id) DO NOTHING`,
    inboxMaxVersion: (names, consumer, aggregateType, aggregateId) =>
      sql`SELECT max(aggregate_version) AS max_version FROM ${raw(table(names, 'inbox'))}
WHERE consumer = ${consumer} AND aggregate_id = ${aggregateId} AND ${sameAggregateType(aggregateType)}`,
  },
  verify: {
    serverVersion: () => sql`SELECT current_setting('server_version') AS version`,
    supportsSkipLocked,
    claimSupport: (version) =>
      !supportsSkipLocked(version)
        ? {ok: false, detail: `PostgreSQL ${version} has no FOR UPDATE SKIP LOCKED (needs 9.5+): relays would wait on each other's rows. Upgrade the server`}
        : !supportsMaterialized(version)
          ? {ok: false, detail: `PostgreSQL ${version} has no WITH ... AS MATERIALIZED (needs 12+), which the claim and archive's batches are written with. Upgrade the server`}
          : {ok: true, detail: `PostgreSQL ${version}: FOR UPDATE SKIP LOCKED (9.5+) and WITH ... AS MATERIALIZED (12+) supported`},
    lockTimeout: (ms) => sql`SET LOCAL lock_timeout = ${raw(`'${positiveMs(ms)}ms'`)}`,
    isolationLevel: () => sql`SELECT current_setting('transaction_isolation') AS level`,
    explain: (statement) => sql`EXPLAIN ${statement}`,
    analyzeRows: {
      statement: (statement) => sql`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`,
      rowsRead: (result, name) =>
        planNodes(result[0]?.['QUERY PLAN'])
          .filter((node) => node['Relation Name'] === name)
          .reduce((n, node) => n + rowsSeen(node) * count(node['Actual Loops']), 0),
    },
    analyze: (names) => sql`ANALYZE ${raw(table(names, 'outbox'))}`,
    dropOutbox: (names) => sql`DROP TABLE IF EXISTS ${raw(table(names, 'outbox'))}`,
  },
  errors: {
    isLockTimeout: (error) => (error as {code?: string})?.code === '55P03',
    isDeadlock: (error) => (error as {code?: string})?.code === '40P01',
    isDuplicateKey: (error) => (error as {code?: string})?.code === '23505',
  },
}

function supportsSkipLocked(version: string): boolean {
  const [major, minor] = version.split(/[.\s]/).map(Number)
  return major > 9 || (major === 9 && minor >= 5)
}

/** WITH ... AS MATERIALIZED arrived in 12; earlier servers refuse the keyword (their CTEs always materialise). */
function supportsMaterialized(version: string): boolean {
  return Number(version.split(/[.\s]/)[0]) >= 12
}

/** SET takes no bound parameters, so the value is inlined: a validated integer only. */
function positiveMs(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 1) throw new RangeError(`invalid lock timeout ${ms}`)
  return ms
}

type PlanNode = Record<string, unknown> & {Plans?: PlanNode[]}

/** Every node of EXPLAIN (FORMAT JSON)'s plan tree (pg parses the json column already). */
function planNodes(plan: unknown): PlanNode[] {
  const roots = (typeof plan === 'string' ? JSON.parse(plan) : (plan ?? [])) as {Plan: PlanNode}[]
  const out: PlanNode[] = []
  const walk = (node: PlanNode) => {
    out.push(node)
    for (const child of node.Plans ?? []) walk(child)
  }
  for (const root of roots) walk(root.Plan)
  return out
}

/** rows a scan node returned and those its filters threw away, per loop */
function rowsSeen(node: PlanNode): number {
  return count(node['Actual Rows']) + count(node['Rows Removed by Filter']) + count(node['Rows Removed by Index Recheck'])
}

function count(value: unknown): number {
  return typeof value === 'number' ? value : 0
}
