// The harness's own scratch tables for one run: the outbox tables under a run prefix, plus a
// log of every delivery the consumer received and every effect it applied. The SQL here is
// portable (same text on all three dialects); dialect SQL stays in dialects/.
import {raw, sql, type Dialect, type PartitionInterval, type TableNames} from '../../dialects/index.js'
import type {Db, Queryable} from '../db/index.js'
import {isMissingTable} from '../db/errors.js'
import {UsageError} from '../core/errors.js'
import {applyInit} from '../schema/init.js'
import type {Scenario, ScenarioContext} from './business-scenario.js'

export interface RunTables {
  prefix: string
  outbox: TableNames
  /** one row per message the consumer received (outcome filled in after handling, acked once the broker took the ack) */
  deliveries: string
  /** one row per applied side effect; seen_max = highest version applied before it, for the order check */
  effects: string
}

/**
 * How the harness and its workers open the database. asyncCommit: on PostgreSQL each session
 * commits without waiting for the WAL flush (synchronous_commit = off; the others ignore it):
 * about 6 ms a COMMIT under load (13 ms against 7 ms, psql, 50 INSERTs), and a run commits
 * 50-200 times, most of it one after the other (a consumer's 4 a message). It weakens nothing
 * chaos checks: the setting defers only the flush to disk, a transaction is still atomic,
 * decided by the server when it reads the COMMIT, and seen by every other session as soon as
 * it commits; one could be lost only in a crash of the server or its machine, which no
 * scenario causes. Chaos kills client processes and cuts client connections (commit-unknown
 * and db-cut cut the client's side of the proxy: the server commits or not as before, and the
 * invariants read that same server). The shipped relay commits so already (relay/service.ts).
 */
export const CHAOS_DB_OPTIONS = {asyncCommit: true, busyTimeoutMs: 10_000} as const

export function runTables(prefix: string): RunTables {
  return {
    prefix,
    outbox: {outbox: `${prefix}_outbox`, inbox: `${prefix}_inbox`, archive: `${prefix}_archive`},
    deliveries: `${prefix}_deliveries`,
    effects: `${prefix}_effects`,
  }
}

const q = (dialect: Dialect, name: string) => raw(dialect.render.quoteIdent(name))

function allNames(t: RunTables, scenario: Scenario): string[] {
  return [t.outbox.outbox, t.outbox.inbox, t.deliveries, t.effects, ...scenario.tables.map((n) => `${t.prefix}_${n}`)]
}

/**
 * The harness only ever drops tables it created: if a table of a run's name is already there
 * (a collision of the random suffix, or someone else's table), it refuses before touching anything.
 */
export async function assertScratchNamesFree(db: Db, t: RunTables, scenario: Scenario): Promise<void> {
  // every name at once: on a server, each is a round trip of the run's set-up
  const taken = await Promise.all(
    allNames(t, scenario).map(async (name) => {
      try {
        const [row] = await db.query<{n: unknown}>(sql`SELECT COUNT(*) AS n FROM ${q(db.dialect, name)}`)
        return {name, rows: Number(row?.n ?? 0)}
      } catch (error) {
        if (isMissingTable(error)) return undefined
        throw error
      }
    }),
  )
  for (const found of taken) {
    if (!found) continue
    const {name, rows} = found
    throw new UsageError(
      `chaos scratch table ${name} already exists${rows ? ` and holds ${rows} row(s)` : ''}; chaos creates and drops only tables it made, so it stopped before changing anything`,
      'Drop that table if it is a leftover of an earlier chaos run (--keep), or point --url at a scratch database',
    )
  }
}

export async function createRunTables(db: Db, t: RunTables, scenario: Scenario, ctx: ScenarioContext, partitionBy?: PartitionInterval): Promise<void> {
  await assertScratchNamesFree(db, t, scenario)
  await makeRunTables(db, t, scenario, ctx, partitionBy)
}

/** The run's tables, once assertScratchNamesFree said the names are free. */
export async function makeRunTables(db: Db, t: RunTables, scenario: Scenario, ctx: ScenarioContext, partitionBy?: PartitionInterval): Promise<void> {
  // unrelated tables, made side by side on the harness's pool (a server's round trips add up);
  // all settled before a failure is thrown, so that the run's drop comes after every CREATE
  const made = await Promise.allSettled([
    applyInit(db, t.outbox, {inbox: true, archive: false, partitionBy}),
    db.execute(sql`CREATE TABLE IF NOT EXISTS ${q(db.dialect, t.deliveries)} (
  delivery_id VARCHAR(64) NOT NULL PRIMARY KEY, event_id VARCHAR(64) NOT NULL, aggregate_id VARCHAR(200),
  aggregate_version INTEGER, outcome VARCHAR(16) NOT NULL, acked INTEGER NOT NULL, pid INTEGER NOT NULL)`),
    db.execute(sql`CREATE TABLE IF NOT EXISTS ${q(db.dialect, t.effects)} (
  event_id VARCHAR(64) NOT NULL, aggregate_id VARCHAR(200), aggregate_version INTEGER, seen_max INTEGER, pid INTEGER NOT NULL)`),
    scenario.setup(db, ctx),
  ])
  const failed = made.find((m) => m.status === 'rejected')
  if (failed) throw failed.reason
}

export async function dropRunTables(db: Db, t: RunTables, scenario: Scenario): Promise<void> {
  for (const name of allNames(t, scenario)) await db.execute(sql`DROP TABLE IF EXISTS ${q(db.dialect, name)}`).catch(() => {})
}

export async function recordDelivery(db: Queryable, dialect: Dialect, t: RunTables, d: {deliveryId: string; eventId: string; aggregateId: string | null; version: number | null}): Promise<void> {
  await db.execute(sql`INSERT INTO ${q(dialect, t.deliveries)} (delivery_id, event_id, aggregate_id, aggregate_version, outcome, acked, pid)
VALUES (${d.deliveryId}, ${d.eventId}, ${d.aggregateId}, ${d.version}, 'received', 0, ${process.pid})`)
}

export async function recordOutcome(db: Queryable, dialect: Dialect, t: RunTables, deliveryId: string, outcome: string): Promise<void> {
  await db.execute(sql`UPDATE ${q(dialect, t.deliveries)} SET outcome = ${outcome} WHERE delivery_id = ${deliveryId}`)
}

/** The broker took the delivery's ack (or its dead letter): it will not come again. */
export async function recordAcked(db: Queryable, dialect: Dialect, t: RunTables, deliveryId: string): Promise<void> {
  await db.execute(sql`UPDATE ${q(dialect, t.deliveries)} SET acked = 1 WHERE delivery_id = ${deliveryId}`)
}

/** Inside the effect's transaction: log it, with the highest version applied before it. */
export async function recordEffect(tx: Queryable, dialect: Dialect, t: RunTables, e: {eventId: string; aggregateId: string | null; version: number | null}): Promise<void> {
  const [row] = await tx.query<{m: unknown}>(sql`SELECT MAX(aggregate_version) AS m FROM ${q(dialect, t.effects)} WHERE aggregate_id = ${e.aggregateId}`)
  const seen = row?.m == null ? null : Number(row.m)
  await tx.execute(sql`INSERT INTO ${q(dialect, t.effects)} (event_id, aggregate_id, aggregate_version, seen_max, pid)
VALUES (${e.eventId}, ${e.aggregateId}, ${e.version}, ${seen}, ${process.pid})`)
}

export const tableRef = q

/** Events neither published nor failed yet. */
export async function countPending(db: Db, t: RunTables): Promise<number> {
  const [row] = await db.query<{n: unknown}>(sql`SELECT COUNT(*) AS n FROM ${q(db.dialect, t.outbox.outbox)} WHERE published_at IS NULL AND failed_at IS NULL`)
  return Number(row.n)
}

/** The highest attempts on any event now: 2 or more once an event was claimed again after a publish that counted. */
export async function highestAttempts(db: Db, t: RunTables): Promise<number> {
  const [row] = await db.query<{n: unknown}>(sql`SELECT MAX(attempts) AS n FROM ${q(db.dialect, t.outbox.outbox)}`)
  return Number(row?.n ?? 0)
}

/**
 * Real brokers: the published events without a delivery the broker took the ack of (0: all
 * handled). A consumer killed between its commit and its ack leaves none: the run waits for the
 * redelivery (after NATS's AckWait, or Redis's claim idle time), and the caller then waits for quiet.
 */
export async function unhandledCount(db: Db, t: RunTables): Promise<number> {
  const d = db.dialect
  // both sides cast: on MySQL a cast takes the connection's collation, which a column of the
  // database's default collation beside it would clash with ("Illegal mix of collations")
  const [row] = await db.query<{n: unknown}>(sql`SELECT COUNT(*) AS n FROM ${q(d, t.outbox.outbox)} e WHERE e.published_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM ${q(d, t.deliveries)} x WHERE CAST(x.event_id AS CHAR(36)) = CAST(e.id AS CHAR(36)) AND x.acked = 1)`)
  return Number(row.n)
}
