// mysql: the claim's low-water mark (ClaimMarkPart in dialects/relay.ts), bounded by a time
// margin. Under a held read view (START TRANSACTION WITH CONSISTENT SNAPSHOT, a long report,
// mysqldump --single-transaction) purge keeps the claim index's delete-marked entries of every
// event published since, and a claim from the start of the index walks them all (150,000-300,000
// pages a claim after 50k-100k events: bench/results/pressure-mariadb-view.md); from the mark it
// seeks past them. There is no live list of the outbox's writers to bound it by (INNODB_TRX is a
// cache that freezes while read often: same file), so the bound is the clock less a margin.
import type {ClaimMarkPart, TableNames} from '../dialect.js'
import {indexNames} from '../shared.js'
import {raw, sql} from '../sql.js'
import {NOW, exactTime, quoteIdent, table} from './render.js'

// DATETIME's least value: below every created_at
const NONE = '1000-01-01 00:00:00.000000'

/**
 * NOW is the clock writeEvent's created_at reads (UTC_TIMESTAMP(6), the INSERT's start). An event
 * still uncommitted when next() reads was inserted after this bound unless its INSERT has been
 * open longer than the margin: that one may fall below the mark and waits for the walk.
 */
const writersBound = (_names: TableNames, marginMs: number) =>
  sql`SELECT ${raw(exactTime(`${NOW} - INTERVAL ${Math.round(marginMs) * 1000} MICROSECOND`))} AS bound`

/**
 * The oldest pending event at or after `old` through the claim index (published_at, failed_at,
 * created_at, id): a seek to `old`, then one entry. LEAST with NULL is NULL, hence the COALESCE.
 */
const next = (names: TableNames, old: string, bound: string) => {
  const boundAt = sql`CAST(${bound} AS DATETIME(6))`
  const oldest = sql`SELECT created_at FROM ${raw(table(names, 'outbox'))} FORCE INDEX (${raw(quoteIdent(indexNames(names).claim))})
  WHERE published_at IS NULL AND failed_at IS NULL AND created_at >= CAST(${old} AS DATETIME(6))
  ORDER BY created_at LIMIT 1`
  return sql`SELECT DATE_FORMAT(LEAST(${boundAt}, COALESCE((${oldest}), ${boundAt})), '%Y-%m-%d %H:%i:%s.%f') AS mark`
}

export const claimMark: ClaimMarkPart = {none: NONE, bound: 'margin', writersBound, next}
