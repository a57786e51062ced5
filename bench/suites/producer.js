// Producer overhead: the business transaction (insert an order row, commit) with and without
// the outbox insert through writeEvent / writeEventSync, on each dialect, in the same run.
import {openProducer} from '../business.js'
import {fmt, median, summary} from '../lib.js'
import {dropTables, freshTables} from '../outbox.js'
import {spread} from '../report.js'
import {ensurePgDatabase, lib, MYSQL_URL, PG_URL, sqliteUrl, unreachable} from '../servers.js'

// [key, dialect, label, writeEvent options]; PostgreSQL also without its NOTIFY (one statement less).
const VARIANTS = [
  ['postgres', 'postgres', 'PostgreSQL', {}],
  ['postgres-nonotify', 'postgres', 'PostgreSQL, `notify: false`', {notify: false}],
  ['mysql', 'mysql', 'MariaDB', {}],
  ['sqlite', 'sqlite', 'SQLite', {}],
]

/** count pairs of transactions, alternating without/with, each timed: median ms of each. */
async function round(producer, options, count, withFirst) {
  const ms = {without: [], with: []}
  for (let i = 0; i < count * 2; i++) {
    const withEvent = (i % 2 === 0) === withFirst
    const started = performance.now()
    await producer.order(withEvent, options)
    ms[withEvent ? 'with' : 'without'].push(performance.now() - started)
  }
  return {without: median(ms.without), with: median(ms.with)}
}

export default async function producer({quick, log}) {
  const perBlock = quick ? 300 : 1000
  const rounds = quick ? 3 : 5
  await ensurePgDatabase()
  const runs = {}
  const skipped = {}
  for (const [key, dialect, , options] of VARIANTS) {
    const url = dialect === 'postgres' ? PG_URL : dialect === 'mysql' ? MYSQL_URL : sqliteUrl()
    if (dialect === 'mysql' && (skipped[key] = await unreachable(url))) {
      log(`${key} skipped: ${skipped[key]}`)
      continue
    }
    delete skipped[key]
    const db = await lib.openDb(url, {poolSize: 1})
    const names = await freshTables(db, 'prod')
    const p = await openProducer(dialect, url, names)
    try {
      await round(p, options, 50, true) // warm-up: connections, plans, caches
      runs[key] = []
      for (let r = 0; r < rounds; r++) {
        // Transactions alternate without/with, so drift on a shared machine hits both alike.
        const m = await round(p, options, perBlock, r % 2 === 1)
        runs[key].push({withoutMs: m.without, withMs: m.with, ratio: m.with / m.without, addedUs: (m.with - m.without) * 1000})
        log(`round ${r + 1}/${rounds} ${key}: ${fmt(m.without, 3)} ms without, ${fmt(m.with, 3)} ms with (x${fmt(m.with / m.without, 2)})`)
      }
    } finally {
      await p.close()
      await dropTables(db, names)
      await db.close()
    }
  }
  const figures = Object.fromEntries(
    Object.entries(runs).map(([k, r]) => [
      k,
      {withoutMs: summary(r.map((x) => x.withoutMs)), withMs: summary(r.map((x) => x.withMs)), ratio: summary(r.map((x) => x.ratio)), addedUs: summary(r.map((x) => x.addedUs))},
    ]),
  )
  return {
    title: 'Producer overhead (business transaction with and without the outbox insert)',
    markdown: markdown({perBlock, rounds, figures, skipped}),
    raw: {perBlock, rounds, runs, figures, skipped},
  }
}

function markdown({perBlock, rounds, figures, skipped}) {
  return [
    `One business transaction = BEGIN, INSERT an order row, [\`writeEvent(client, event)\` — or \`writeEventSync\` on better-sqlite3], COMMIT, on one connection of the native driver (pg, mysql2/promise, better-sqlite3 in WAL with synchronous = NORMAL), sequentially. ${rounds} rounds; in each, ${perBlock} transactions without and ${perBlock} with the outbox insert, alternating one by one, each timed; a round's figure is the median transaction time of each kind, and its cost is with ÷ without. Cells: median (min–max) over the rounds. Commits are durable as the servers are configured (machine header), so on PostgreSQL and MariaDB the WAL flush at COMMIT is most of a transaction.`,
    '',
    '| database | ms/tx without outbox | ms/tx with outbox | cost (with ÷ without) | added µs/tx |',
    '|---|---|---|---|---|',
    ...VARIANTS.map(([key, , label]) => {
      const f = figures[key]
      if (!f) return `| ${label} | skipped: ${skipped[key]} | | | |`
      return `| ${label} | ${spread(f.withoutMs, 3)} | ${spread(f.withMs, 3)} | ${spread(f.ratio, 2)} | ${spread(f.addedUs, 0)} |`
    }),
    '',
    'SQLite\'s ratio is large because its base transaction is tiny (one row, one index, no network, no fsync per commit in WAL/NORMAL); the outbox row adds a second, wider row and four indexes. Read the added µs there, not the ratio.',
    '',
    "On PostgreSQL `writeEvent` also runs `SELECT pg_notify(...)` (one more round trip) so listening relays wake at commit; `notify: false` shows the insert alone.",
    '',
    'Reproduce: `npm run build && npm run bench -- producer`.',
  ].join('\n')
}

/** The figures `npm run bench -- compare` puts side by side: what writeEvent adds to a business transaction. */
export function headline(raw) {
  return Object.entries(raw.figures).flatMap(([key, f]) => [
    {key: `${key} added us`, label: `${key}: µs writeEvent adds to a business transaction (median of ${f.addedUs.runs} rounds)`, value: f.addedUs.median, better: 'lower'},
    {key: `${key} with/without`, label: `${key}: transaction time with the outbox insert / without (median of ${f.ratio.runs} rounds)`, value: f.ratio.median, better: 'lower'},
  ])
}
