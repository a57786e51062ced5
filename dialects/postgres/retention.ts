// postgres: a partition leaves the outbox by DETACH PARTITION, CONCURRENTLY where PostgreSQL
// allows it (outside a transaction block, and never while the table has a DEFAULT partition,
// which init --partition-by makes); the detached table keeps its name and carries the mark in
// its comment until it is dropped, or copied into the archive and dropped, in one transaction.
import type {RetentionPart, TableNames} from '../dialect.js'
import {retiredComment, retiredOf} from '../retention.js'
import {quoteString} from '../shared.js'
import {catchAllRows, throughCatchAll} from './catch-all.js'
import {raw, sql} from '../sql.js'
import {table} from './render.js'

const LOCK_WAIT = '5s' // a relay's claim or mark holds the outbox for milliseconds; 5 s is a long transaction

const partitionTable = (names: TableNames, partition: string) => raw(table({...names, outbox: partition}, 'outbox'))
const outbox = (names: TableNames) => raw(table(names, 'outbox'))
// what makes a row stay in the outbox: not yet published, failed, or published too recently
const kept = (publishedBefore: Date) => sql`NOT (published_at IS NOT NULL AND failed_at IS NULL AND published_at < ${publishedBefore})`

export const retention: RetentionPart = {
  detachWay: (hasCatchAll) =>
    hasCatchAll
      ? {kind: 'detach', why: 'DETACH PARTITION, not CONCURRENTLY: PostgreSQL refuses that while the table has a DEFAULT partition (a brief ACCESS EXCLUSIVE lock on the outbox, waited for 5 s at most)'}
      : {kind: 'detach-concurrently', why: 'DETACH PARTITION ... CONCURRENTLY, outside a transaction: producers and relays keep going'},
  check: (names, partition, publishedBefore) => sql`SELECT count(*) AS row_count,
  count(*) FILTER (WHERE published_at IS NULL AND failed_at IS NULL) AS unpublished,
  count(*) FILTER (WHERE failed_at IS NOT NULL) AS failed,
  count(*) FILTER (WHERE published_at >= ${publishedBefore} AND failed_at IS NULL) AS recent
FROM ${partitionTable(names, partition)}`,
  retiredTable: (_names, partition) => partition,
  detach: (names, partition, mode, way) => {
    const detach = `ALTER TABLE ${table(names, 'outbox')} DETACH PARTITION ${table({...names, outbox: partition}, 'outbox')}`
    return [
      sql`COMMENT ON TABLE ${partitionTable(names, partition)} IS ${raw(quoteString(retiredComment(names, mode, partition)))}`,
      way.kind === 'detach-concurrently'
        ? sql`${raw(detach)} CONCURRENTLY`
        : // its ACCESS EXCLUSIVE lock request queues every producer's insert behind it: it gives up
          // after LOCK_WAIT rather than wait out a long transaction on the outbox (the run fails, a rerun tries again)
          sql`DO ${raw(`$$BEGIN SET LOCAL lock_timeout = '${LOCK_WAIT}'; EXECUTE ${quoteString(detach)}; END$$`)}`,
    ]
  },
  retired: (names) => sql`SELECT c.relname AS name, d.description AS comment,
  CASE WHEN i.inhdetachpending THEN 'pending' WHEN i.inhrelid IS NOT NULL THEN 'attached' ELSE 'detached' END AS state
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
WHERE n.nspname = coalesce(${names.schema ?? null}::text, current_schema()) AND c.relkind = 'r'
  AND d.description LIKE 'outbox retired %' AND right(d.description, ${retiredOf(names).length}) = ${retiredOf(names)}
ORDER BY c.relname`,
  finalize: (names, partition) => sql`ALTER TABLE ${outbox(names)} DETACH PARTITION ${partitionTable(names, partition)} FINALIZE`,
  retiredRows: (names, retired, publishedBefore) =>
    sql`SELECT event_type, count(*) AS n, count(*) FILTER (WHERE ${kept(publishedBefore)}) AS kept FROM ${partitionTable(names, retired)} GROUP BY event_type`,
  landed: (names, _partition, range, catchAll) => (catchAll ? catchAllRows(names, catchAll, range) : undefined),
  drop: (names, retired) => [sql`DROP TABLE ${partitionTable(names, retired)}`],
  discard: (names, retired) => sql`DROP TABLE ${partitionTable(names, retired)}`,
  restore: (names, retired, _partition, range, landed, catchAll) => {
    const attach = sql`ALTER TABLE ${outbox(names)} ATTACH PARTITION ${partitionTable(names, retired)} FOR VALUES FROM (${raw(quoteString(range.from.toISOString()))}) TO (${raw(quoteString(range.to.toISOString()))})`
    // rows written into its range meanwhile sit in the DEFAULT partition, which refuses the attach while they do
    return [...(landed > 0 && catchAll ? throughCatchAll(names, catchAll, range, [attach]) : [attach]), sql`COMMENT ON TABLE ${partitionTable(names, retired)} IS NULL`]
  },
  unmark: (names, partition) => sql`COMMENT ON TABLE ${partitionTable(names, partition)} IS NULL`,
}
