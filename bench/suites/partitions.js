// A partitioned outbox (init --partition-by day) against an unpartitioned one holding the same
// rows, on PostgreSQL and MariaDB: the relay's drain of a pending backlog (claim + mark, no-op
// publisher, batch 100) and `status` (readStatus). Both tables hold 30 days of published
// history (PostgreSQL: in its daily partitions; MariaDB: the same) and the same backlog, today.
// Runs are interleaved pair by pair, alternating which table goes first; each drain starts from
// the same backlog, reset to pending. Target (issue 25): the partitioned table within 1.2x.
// --quick: 3 pairs and 20k history rows instead of 9 pairs and 200k; --dialect=postgres|mysql: that server only.
// Then `partitions --ensure` with rows already in the catch-all (bench/partitions-ensure.js):
// 100k rows (--quick: 10k), 3 rounds of each case (--quick: 1); --skip-ensure leaves it out.
import {randomUUID} from 'node:crypto'
import {loadavg} from 'node:os'
import {fmt, summary} from '../lib.js'
import {spread} from '../report.js'
import {applyInit, ensurePartitions, initPlan, join, openDb, raw, sql} from '../lib-under-test.js'
import {BACKLOG, BATCH, drainAndStatusPairs} from '../partitions-pairs.js'
import {dropEnsureTables, ENSURE_CASES, ensureRound, stageEnsure} from '../partitions-ensure.js'

const URLS = {
  postgres: process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  mysql: process.env.OUTBOX_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
}
const TARGET = 1.2
const DAY = 86_400_000
// OUTBOX_BENCH_PREFIX: another prefix for the tables (two runs on one server at once)
const PREFIX = process.env.OUTBOX_BENCH_PREFIX ?? 'bench'
const tables = (tag) => ({outbox: `${PREFIX}_part_${tag}`, inbox: `${PREFIX}_part_${tag}_in`, archive: `${PREFIX}_part_${tag}_ar`})

async function create(db, plain, parted, now) {
  for (const names of [plain, parted]) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(names, 'outbox'))}`)
  await applyInit(db, plain, {inbox: false, archive: false})
  // the partitioned table's ranges start 31 days back, as if it had run for a month
  for (const s of initPlan(db.dialect, parted, {inbox: false, archive: false, partitionBy: 'day'}, new Date(now.getTime() - 31 * DAY)).filter((s) => !s.repairOnly)) {
    await db.execute(sql`${raw(s.sql.replace(/;\s*$/, ''))}`)
  }
  await ensurePartitions(db, parted, {aheadMs: 7 * DAY})
}

/** history rows published over 30 days, then BACKLOG pending rows of today, into `plain`; copied to `parted`. */
async function seed(db, plain, parted, now, history) {
  const t = raw(db.dialect.render.table(plain, 'outbox'))
  const at = (ms) => db.dialect.render.timeParam(new Date(ms))
  const start = now.getTime() - 30 * DAY
  for (let from = 0; from < history + BACKLOG; from += 1000) {
    const rows = []
    for (let i = from; i < Math.min(history + BACKLOG, from + 1000); i++) {
      const pending = i >= history
      const created = pending ? now.getTime() - 3_600_000 + (i - history) : start + Math.floor((i * 30 * DAY) / history)
      const type = pending ? 'bench.pending' : 'bench.history'
      rows.push(sql`(${randomUUID()}, ${type}, ${`agg-${i}`}, ${JSON.stringify({i})}, ${at(created)}, ${pending ? null : at(created + 1000)})`)
    }
    await db.execute(sql`INSERT INTO ${t} (id, event_type, aggregate_id, payload, created_at, published_at) VALUES ${join(rows)}`)
  }
  await db.execute(sql`INSERT INTO ${raw(db.dialect.render.table(parted, 'outbox'))} SELECT * FROM ${t}`)
  for (const names of [plain, parted]) await db.execute(db.dialect.verify.analyze(names))
}

export default async function partitions({quick, log, args = []}) {
  const ensure = !args.includes('--skip-ensure')
  const only = args.find((a) => a.startsWith('--dialect='))?.split('=')[1]
  const pairs = quick ? 3 : 9
  const history = quick ? 20_000 : 200_000
  const rows = []
  const byDialect = {}
  const loadStart = loadavg()[0]
  for (const [dialect, url] of Object.entries(URLS)) {
    if (only && only !== dialect) continue
    const db = await openDb(url, {poolSize: 2})
    const plain = tables('u')
    const parted = tables('p')
    try {
      const [{now: clock}] = await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`)
      const now = db.dialect.render.parseTime(clock)
      await create(db, plain, parted, now)
      await seed(db, plain, parted, now, history)
      log(`${dialect}: seeded ${history} + ${BACKLOG} rows into both tables`)
      const {figures, times: t, ratios} = await drainAndStatusPairs(db, {plain, parted, count: pairs, log, label: dialect})
      byDialect[dialect] = {...figures, times: t, ratios, ...(ensure && {ensure: await ensureFigures(db, url, dialect, quick, log)})}
      const verdict = (r) => (r <= TARGET ? 'met' : 'MISSED')
      rows.push(`| ${dialect === 'mysql' ? 'mysql (MariaDB)' : dialect} | drain ${BACKLOG} pending (claim + mark), ms | ${spread(figures.drain.plain, 0)} | ${spread(figures.drain.parted, 0)} | **${spread(figures.drain.ratio, 2)}x** | ${verdict(figures.drain.ratio.median)} |`)
      rows.push(`| | status (readStatus), ms | ${spread(figures.status.plain)} | ${spread(figures.status.parted)} | **${spread(figures.status.ratio, 2)}x** | ${verdict(figures.status.ratio.median)} |`)
    } finally {
      for (const names of [plain, parted]) await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(names, 'outbox'))}`).catch(() => {})
      await dropEnsureTables(db).catch(() => {})
      await db.close()
    }
  }
  const markdown = `${quick ? `**Quick run**: ${pairs} pairs, ${history} history rows.\n\n` : ''}Two tables with the same rows: ${history} events published over the last 30 days and
${BACKLOG} pending ones of today; one unpartitioned, one made by \`init --partition-by day\` with
daily ranges from 31 days back (\`partitions --ensure 7d\` after). Per pair, the relay drains
the backlog (reset to pending before each drain; no-op publisher, batch ${BATCH}) and \`readStatus\`
runs three times (median kept), on each table, alternating which goes first; ${pairs} pairs.
Ratio: partitioned / unpartitioned time, per pair, median (min–max). Target: within ${TARGET}x.
Load average (2 cores, shared with other engineers' test runs): ${fmt(loadStart)} at the start, ${fmt(loadavg()[0])} at the end.

| dialect | figure | unpartitioned | partitioned | partitioned / unpartitioned | target |
|---|---|---|---|---|---|
${rows.join('\n')}

${ensureMarkdown(byDialect, quick)}`
  return {title: 'A partitioned outbox: the relay drain and status against an unpartitioned one; partitions --ensure', markdown, raw: {pairs, history, backlog: BACKLOG, target: TARGET, ...byDialect}}
}

/** partitions --ensure per case, rounds interleaved (the cases' order rotates), on one server. */
async function ensureFigures(db, url, dialect, quick, log) {
  const rows = quick ? 10_000 : 100_000
  const rounds = quick ? 1 : 3
  await stageEnsure(db, rows)
  const runs = Object.fromEntries(ENSURE_CASES.map((c) => [c, []]))
  for (let i = 0; i < rounds; i++) {
    for (let j = 0; j < ENSURE_CASES.length; j++) {
      const kind = ENSURE_CASES[(i + j) % ENSURE_CASES.length]
      const r = await ensureRound(db, url, kind)
      runs[kind].push(r)
      log(`${dialect} ensure ${kind}: ${fmt(r.ms, 0)} ms, ${r.added} ranges, ${r.moved} rows moved, producer's slowest insert ${fmt(r.producerMs, 0)} ms, again ${fmt(r.againMs)} ms`)
    }
  }
  const of = (kind, key) => summary(runs[kind].map((r) => r[key]))
  const ratio = (kind) => summary(runs[kind].map((r, i) => r.ms / runs.empty[i].ms))
  return {rows, rounds, runs, cases: Object.fromEntries(ENSURE_CASES.map((c) => [c, {ms: of(c, 'ms'), producerMs: of(c, 'producerMs'), againMs: of(c, 'againMs'), moved: runs[c][0].moved, added: runs[c][0].added, ratio: ratio(c)}]))}
}

function ensureMarkdown(byDialect, quick) {
  const any = Object.values(byDialect)[0]?.ensure
  if (!any) return ''
  const what = {empty: 'empty catch-all', inside: `${any.rows} rows inside the new ranges (moved)`, beyond: `${any.rows} rows past the new ranges (stay)`}
  const lines = Object.entries(byDialect).flatMap(([dialect, d]) =>
    ENSURE_CASES.map((c, i) => {
      const f = d.ensure.cases[c]
      return `| ${i === 0 ? (dialect === 'mysql' ? 'mysql (MariaDB)' : dialect) : ''} | ${what[c]} | ${f.added} | ${f.moved} | ${spread(f.ms, 0)} | ${c === 'empty' ? '1' : spread(f.ratio, 2)}x | ${spread(f.producerMs, 0)} | ${spread(f.againMs)} |`
    }),
  )
  return `### partitions --ensure with rows in the catch-all

${quick ? '**Quick run.** ' : ''}A fresh table per round (\`init --partition-by day\`: ranges to a week ahead), then
\`ensurePartitions(14d)\` adds the 7 missing daily ranges with the catch-all partition (PostgreSQL
DEFAULT, MariaDB MAXVALUE) empty, holding ${any.rows} rows dated inside the ranges being added
(moved into them: the default-partition recovery), or ${any.rows} rows dated past them (they
stay); ${any.rounds} round(s), the cases' order rotated. Meanwhile a producer inserts into today's
partition every 20 ms on its own connection: its slowest insert is how long ensure held writers
up. "Again": a second ensure, nothing missing (cron on most days). Median (min–max).

| dialect | catch-all | ranges added | rows moved | ensure, ms | / empty | producer's slowest insert, ms | again, ms |
|---|---|---|---|---|---|---|---|
${lines.join('\n')}`
}
