// Retention by partition (issue 25): `archive --before` of the oldest day with --delete on an
// outbox partitioned by day (init --partition-by day), which takes that day's partition out and
// drops it, against the batched delete of the same rows (archive's batches, 1000 a batch) on an
// unpartitioned copy holding the same rows. Time, and the log the server wrote meanwhile:
// PostgreSQL's WAL (pg_wal_lsn_diff of pg_current_wal_lsn before and after), MariaDB's redo log
// (the Innodb_os_log_written status). Both figures are the whole server's: other sessions on a
// shared server add to them, which the results say.
// `npm run bench -- retention [--days=30] [--rows=1000000]`: days of history, rows a day
// (default 30 x 1,000,000); --quick: 5 x 20,000; --dialect=postgres|mysql: that server only;
// --pairs=5: the drain-and-status pairs on both tables before the drop (--quick: 2).
// One measurement per table per dialect: the drop cannot be repeated on the same rows.
import {loadavg} from 'node:os'
import {fmt} from '../lib.js'
import {archive, ensurePartitions, initPlan, openDb, raw, sql} from '../lib-under-test.js'
import {BACKLOG, BATCH as PAIR_BATCH, drainAndStatusPairs} from '../partitions-pairs.js'
import {spread} from '../report.js'

const URLS = {
  postgres: process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  mysql: process.env.OUTBOX_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
}
const DAY = 86_400_000
const BATCH = 1000
// OUTBOX_BENCH_PREFIX: another prefix for the tables (two runs on one server at once)
const PREFIX = process.env.OUTBOX_BENCH_PREFIX ?? 'bench'
const tables = (tag) => ({outbox: `${PREFIX}_ret_${tag}`, inbox: `${PREFIX}_ret_${tag}_in`, archive: `${PREFIX}_ret_${tag}_ar`})

// server-side rows: n = 0 .. days x rows - 1, day n / rows from `start`, ids ascending with
// created_at (as the producer's UUIDv7 are), published a second after creation
export const SEED = {
  postgres: (t, start, total, perDay) => sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at, published_at)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench.retention', 'agg-' || (g % 1000), '{"n": 1}'::jsonb, c, c + interval '1 second'
FROM generate_series(0, ${total - 1}) g, LATERAL (SELECT ${start}::timestamptz + (g / ${perDay}) * interval '1 day' + (g % ${perDay}) * (interval '1 day' / ${perDay}) AS c) x`,
  mysql: (t, start, total, perDay) => sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at, published_at)
SELECT CONCAT('00000000-0000-7000-8000-', LPAD(HEX(seq), 12, '0')), 'bench.retention', CONCAT('agg-', seq MOD 1000), '{"n": 1}', c, c + INTERVAL 1 SECOND
FROM (SELECT seq, TIMESTAMPADD(MICROSECOND, (seq MOD ${perDay}) * FLOOR(86400000000 / ${perDay}), TIMESTAMPADD(DAY, seq DIV ${perDay}, CAST(${start} AS DATETIME(6)))) AS c FROM seq_0_to_${raw(String(total - 1))}) s`,
}

// BACKLOG pending events of today (after the history), the pairs' backlog
export const PENDING = {
  postgres: (t, today) => sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at)
SELECT gen_random_uuid(), 'bench.pending', 'agg-' || g, '{"n": 1}'::jsonb, ${today}::timestamptz + g * interval '1 millisecond' FROM generate_series(0, ${BACKLOG - 1}) g`,
  mysql: (t, today) => sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at)
SELECT UUID(), 'bench.pending', CONCAT('agg-', seq), '{"n": 1}', TIMESTAMPADD(MICROSECOND, seq * 1000, CAST(${today} AS DATETIME(6))) FROM seq_0_to_${raw(String(BACKLOG - 1))}`,
}

const LOG = {
  postgres: {read: sql`SELECT pg_current_wal_lsn()::text AS at`, bytes: (db, a, b) => db.query(sql`SELECT pg_wal_lsn_diff(${b}::pg_lsn, ${a}::pg_lsn) AS n`).then(([r]) => Number(r.n)), name: 'WAL'},
  mysql: {read: sql`SHOW GLOBAL STATUS LIKE 'Innodb_os_log_written'`, bytes: async (_db, a, b) => Number(b) - Number(a), name: 'redo log'},
}

async function logAt(db, dialect) {
  const [row] = await db.query(LOG[dialect].read)
  return dialect === 'postgres' ? row.at : row.Value ?? row.value
}

async function create(db, plain, parted, start) {
  for (const names of [plain, parted]) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(names, 'outbox'))}`)
  for (const [names, options] of [[plain, {}], [parted, {partitionBy: 'day'}]]) {
    for (const s of initPlan(db.dialect, names, {inbox: false, archive: false, ...options}, start).filter((s) => !s.repairOnly)) await db.execute(sql`${raw(s.sql.replace(/;\s*$/, ''))}`)
  }
  await ensurePartitions(db, parted, {aheadMs: 7 * DAY})
}

async function measure(db, dialect, names, before) {
  const from = await logAt(db, dialect)
  const started = performance.now()
  const result = await archive(db, names, {before, delete: true, batch: BATCH}) // published a month ago: past the 24h default
  const ms = performance.now() - started
  const bytes = await LOG[dialect].bytes(db, from, await logAt(db, dialect))
  return {ms, bytes, archived: result.archived, batches: result.batches, partitions: result.partitions?.retired.map((p) => p.name) ?? []}
}

function option(args, name, fallback) {
  const given = args.find((a) => a.startsWith(`--${name}=`))
  return given ? Number(given.split('=')[1]) : fallback
}

export default async function retention({quick, log, args = []}) {
  const days = option(args, 'days', quick ? 5 : 30)
  const perDay = option(args, 'rows', quick ? 20_000 : 1_000_000)
  const only = args.find((a) => a.startsWith('--dialect='))?.split('=')[1]
  const loadStart = loadavg()[0]
  const pairCount = option(args, 'pairs', quick ? 2 : 5)
  const rows = []
  const pairRows = []
  const byDialect = {}
  for (const [dialect, url] of Object.entries(URLS)) {
    if (only && only !== dialect) continue
    const db = await openDb(url, {poolSize: 3})
    const plain = tables('u')
    const parted = tables('p')
    try {
      const [{now: clock}] = await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`)
      const now = db.dialect.render.parseTime(clock)
      const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())
      const start = new Date(today - days * DAY)
      await create(db, plain, parted, start)
      let seeded = performance.now()
      // both tables at once, each on its own connection (the same rows: the ids are made from the row number)
      const table = (names) => raw(db.dialect.render.table(names, 'outbox'))
      await Promise.all([plain, parted].map((names) => db.execute(SEED[dialect](table(names), db.dialect.render.timeParam(start), days * perDay, perDay))))
      for (const names of [plain, parted]) await db.execute(PENDING[dialect](table(names), db.dialect.render.timeParam(new Date(today))))
      for (const names of [plain, parted]) await db.execute(db.dialect.verify.analyze(names))
      log(`${dialect}: seeded ${days} x ${perDay} rows (and ${BACKLOG} pending) into both tables in ${fmt((performance.now() - seeded) / 1000, 0)} s`)
      await new Promise((resolve) => setTimeout(resolve, 2000)) // the seed's background writes settle
      const paired = await drainAndStatusPairs(db, {plain, parted, count: pairCount, since: new Date(today), log, label: dialect})
      const before = new Date(start.getTime() + DAY) // the oldest day, whole
      const drop = await measure(db, dialect, parted, before)
      log(`${dialect} partition drop: ${fmt(drop.ms, 0)} ms, ${LOG[dialect].name} ${drop.bytes} bytes, ${drop.archived} rows (${drop.partitions.join(', ')})`)
      await new Promise((resolve) => setTimeout(resolve, 2000))
      const batched = await measure(db, dialect, plain, before)
      log(`${dialect} batched delete: ${fmt(batched.ms, 0)} ms, ${LOG[dialect].name} ${batched.bytes} bytes, ${batched.archived} rows in ${batched.batches} batches`)
      if (drop.archived !== perDay || batched.archived !== perDay || drop.partitions.length !== 1) throw new Error(`${dialect}: removed ${drop.archived} / ${batched.archived} rows, expected ${perDay} each`)
      byDialect[dialect] = {drop, batched, timeRatio: batched.ms / drop.ms, logRatio: batched.bytes / Math.max(drop.bytes, 1), ...paired}
      const f = paired.figures
      pairRows.push(`| ${dialect === 'mysql' ? 'mysql (MariaDB)' : dialect} | drain ${BACKLOG} pending (claim + mark), ms | ${spread(f.drain.plain, 0)} | ${spread(f.drain.parted, 0)} | **${spread(f.drain.ratio, 2)}x** |`)
      pairRows.push(`| | status (readStatus), ms | ${spread(f.status.plain)} | ${spread(f.status.parted)} | **${spread(f.status.ratio, 2)}x** |`)
      const label = dialect === 'mysql' ? 'mysql (MariaDB)' : dialect
      rows.push(`| ${label} | time, ms | ${fmt(batched.ms, 0)} | ${fmt(drop.ms, 0)} | **${fmt(batched.ms / drop.ms, 1)}x** |`)
      rows.push(`| | ${LOG[dialect].name}, bytes | ${batched.bytes.toLocaleString('en')} | ${drop.bytes.toLocaleString('en')} | **${fmt(batched.bytes / Math.max(drop.bytes, 1), 0)}x** |`)
    } finally {
      for (const names of [plain, parted]) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(names, 'outbox'))}`).catch(() => {})
      await db.close()
    }
  }
  const markdown = `${quick ? `**Quick run**: ${days} days of ${perDay} rows.\n\n` : ''}Two outboxes holding the same ${days} days x ${perDay.toLocaleString('en')} published events (ids ascending with
created_at, as UUIDv7): one made by \`init --partition-by day\` (a partition a day), one
unpartitioned. \`archive --before <end of the oldest day> --delete\` on each (the library's
\`archive\`, as the command runs it): on the partitioned one the oldest day's partition is
checked, taken out and dropped (PostgreSQL: DETACH PARTITION, plain since init makes a DEFAULT
partition; MariaDB: EXCHANGE PARTITION with a staging table, DROP PARTITION); on the other, the
same ${perDay.toLocaleString('en')} rows are deleted in batches of ${BATCH}. One measurement each (the drop cannot be
repeated on the same rows). Log bytes are the whole server's between the run's start and end:
other sessions on this shared server add to both columns.
Load average (2 cores, shared with other engineers' test runs): ${fmt(loadStart)} at the start, ${fmt(loadavg()[0])} at the end.

| dialect | figure | batched delete (unpartitioned) | partition drop | batched / drop |
|---|---|---|---|---|
${rows.join('\n')}

Before the drop, on the same two tables (${BACKLOG} pending events of today added to each): the
relay's drain of that backlog (claim + mark, batch ${PAIR_BATCH}, reset to pending before each drain)
and \`readStatus\` (median of three), ${pairCount} pairs alternating which table goes first.
Ratio: partitioned / unpartitioned, per pair, median (min–max). Target (issue 25): within 1.2x.

| dialect | figure | unpartitioned | partitioned | partitioned / unpartitioned |
|---|---|---|---|---|
${pairRows.join('\n')}`
  return {title: 'Retention by partition: the oldest day dropped against the same rows deleted in batches', markdown, raw: {days, rowsPerDay: perDay, batch: BATCH, pairs: pairCount, backlog: BACKLOG, ...byDialect}}
}
