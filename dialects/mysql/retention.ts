// mysql: MySQL and MariaDB have no DETACH. A partition's rows leave the outbox by EXCHANGE
// PARTITION with an empty staging table of the same shape (<outbox>_retire_<partition>, the mark
// in its comment), one atomic statement; the staging table is then dropped (after its rows were
// copied into the archive) and the partition, empty now, with DROP PARTITION.
import type {RetentionPart, TableNames} from '../dialect.js'
import {retiredComment, retiredOf} from '../retention.js'
import {quoteString} from '../shared.js'
import {raw, sql} from '../sql.js'
import {datetime, quoteIdent, table} from './render.js'

const named = (names: TableNames, name: string) => raw(table({...names, outbox: name}, 'outbox'))
const outbox = (names: TableNames) => raw(table(names, 'outbox'))
const staging = (names: TableNames, partition: string) => `${names.outbox}_retire_${partition}`
/** how long LOCK TABLES waits for a long transaction on the outbox; a rerun tries again */
export const LOCK_WAIT_SECONDS = 5
const kept = (publishedBefore: Date) => sql`NOT (published_at IS NOT NULL AND failed_at IS NULL AND published_at < ${datetime(publishedBefore)})`

export const retention: RetentionPart = {
  detachWay: () => ({kind: 'exchange', why: 'EXCHANGE PARTITION with an empty staging table, then DROP PARTITION (MySQL/MariaDB have no DETACH)'}),
  check: (names, partition, publishedBefore) => sql`SELECT COUNT(*) AS row_count,
  COALESCE(SUM(published_at IS NULL AND failed_at IS NULL), 0) AS unpublished,
  COALESCE(SUM(failed_at IS NOT NULL), 0) AS failed,
  COALESCE(SUM(published_at >= ${datetime(publishedBefore)} AND failed_at IS NULL), 0) AS recent
FROM ${outbox(names)} PARTITION (${raw(quoteIdent(partition))})`,
  retiredTable: staging,
  detach: (names, partition, mode) => {
    const retired = named(names, staging(names, partition))
    return [
      // one left by a run that died before marking it never took part in an exchange: it is empty
      sql`DROP TABLE IF EXISTS ${retired}`,
      sql`CREATE TABLE ${retired} LIKE ${outbox(names)}`,
      sql`ALTER TABLE ${retired} REMOVE PARTITIONING`,
      sql`ALTER TABLE ${retired} COMMENT = ${raw(quoteString(retiredComment(names, mode, partition)))}`,
      sql`ALTER TABLE ${outbox(names)} EXCHANGE PARTITION ${raw(quoteIdent(partition))} WITH TABLE ${retired}`,
    ]
  },
  retired: (names) => sql`SELECT table_name AS name, table_comment AS comment, 'detached' AS state FROM information_schema.tables
WHERE table_schema = COALESCE(${names.schema ?? null}, DATABASE()) AND table_comment LIKE 'outbox retired %'
  AND RIGHT(table_comment, ${retiredOf(names).length}) = ${retiredOf(names)}
ORDER BY table_name`,
  retiredRows: (names, retired, publishedBefore) =>
    sql`SELECT event_type, COUNT(*) AS n, COALESCE(SUM(${kept(publishedBefore)}), 0) AS kept FROM ${named(names, retired)} GROUP BY event_type`,
  landed: (names, partition) => sql`SELECT COUNT(*) AS n FROM ${outbox(names)} PARTITION (${raw(quoteIdent(partition))})`,
  // LOCK TABLES commits the copy's transaction, as the DDL after it would; ALTER TABLE and DROP
  // TABLE keep the session's other locks (MariaDB 10.11: a writer's INSERT waits until UNLOCK).
  // Its wait is lock_wait_timeout's (a day on MariaDB, a year on MySQL), and every writer queues
  // behind it meanwhile: set to LOCK_WAIT_SECONDS for it, as PostgreSQL's DETACH waits 5 s.
  guard: {
    // (back to DEFAULT, the server's: our connections set no other; a user variable holding the
    // old value is untyped in a prepared statement, which MariaDB refuses for this variable)
    lock: (names, retired) => [
      sql`SET SESSION lock_wait_timeout = ${raw(String(LOCK_WAIT_SECONDS))}`,
      sql`LOCK TABLES ${outbox(names)} WRITE, ${named(names, retired)} WRITE`,
    ],
    unlock: [sql`UNLOCK TABLES`, sql`SET SESSION lock_wait_timeout = DEFAULT`],
  },
  drop: (names, retired, partition, landed) => [
    sql`DROP TABLE ${named(names, retired)}`,
    // rows written into its range since the exchange stay, and the partition with them
    ...(landed > 0 ? [] : [sql`ALTER TABLE ${outbox(names)} DROP PARTITION ${raw(quoteIdent(partition))}`]),
  ],
  discard: (names, retired) => sql`DROP TABLE ${named(names, retired)}`,
  restore: (names, retired, partition, _range, landed) => [
    // an exchange back would swap rows written meanwhile into the table dropped next: they get the retired rows added instead
    landed > 0
      ? sql`INSERT INTO ${outbox(names)} SELECT * FROM ${named(names, retired)} ON DUPLICATE KEY UPDATE id = ${outbox(names)}.id`
      : sql`ALTER TABLE ${outbox(names)} EXCHANGE PARTITION ${raw(quoteIdent(partition))} WITH TABLE ${named(names, retired)}`,
    sql`DROP TABLE ${named(names, retired)}`,
  ],
}
