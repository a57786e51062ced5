// End-to-end latency: producer COMMIT -> the relay's publisher seeing the event, at a steady
// moderate load, with polling (pollMs 100 / 1000) and, on PostgreSQL, LISTEN/NOTIFY.
// --quick: 1 s runs, 2 rounds, no 1000 ms polling rows (the wait is the interval, as the 100 ms
// rows show) and no concurrency-2 row.
import {openProducer} from '../business.js'
import {fmt, percentile, summary} from '../lib.js'
import {dropTables, freshTables, noopPublisher} from '../outbox.js'
import {spread} from '../report.js'
import {ensurePgDatabase, lib, MYSQL_URL, PG_URL, sqliteUrl, unreachable} from '../servers.js'

const RATE = 200
// Producer connections: one cannot sustain RATE when a durable COMMIT takes 10-20 ms here.
const PRODUCERS = 4
const TARGET_P99_MS = 50

// The relay's own sessions only: its claim and mark then skip the WAL flush wait. A mark or
// lease lost in a server crash means a resend, which consumers dedupe; producers stay durable.
const ASYNC_COMMIT = 'options=-c%20synchronous_commit%3Doff'

const SCENARIOS = [
  {key: 'postgres-listen', dialect: 'postgres', pollMs: 1000, listen: true},
  {key: 'postgres-listen-async', dialect: 'postgres', pollMs: 1000, listen: true, relayUrl: `${PG_URL}?${ASYNC_COMMIT}`},
  // The batch held by its claim's transaction (leaseBy 'transaction'): no lease written, one commit a batch.
  {key: 'postgres-listen-txlease', dialect: 'postgres', pollMs: 1000, listen: true, leaseBy: 'transaction'},
  // A second claim loop is asleep when the first is busy, so a NOTIFY wakes one at once.
  {key: 'postgres-listen-c2', dialect: 'postgres', pollMs: 1000, listen: true, concurrency: 2},
  {key: 'postgres-poll100', dialect: 'postgres', pollMs: 100},
  {key: 'postgres-poll1000', dialect: 'postgres', pollMs: 1000},
  {key: 'mysql-poll100', dialect: 'mysql', pollMs: 100},
  {key: 'mysql-poll1000', dialect: 'mysql', pollMs: 1000},
  {key: 'sqlite-poll100', dialect: 'sqlite', pollMs: 100},
  {key: 'sqlite-poll1000', dialect: 'sqlite', pollMs: 1000},
]

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)))
const urlOf = (dialect) => (dialect === 'postgres' ? PG_URL : dialect === 'mysql' ? MYSQL_URL : sqliteUrl())

/** One run: RATE events/s for `seconds`, one transaction per event, open loop on a schedule. */
async function measure(scenario, seconds) {
  const url = urlOf(scenario.dialect)
  const concurrency = scenario.concurrency ?? 1
  const db = await lib.openDb(scenario.relayUrl ?? url, {poolSize: concurrency + 2})
  const names = await freshTables(db, 'lat')
  const producers = []
  for (let i = 0; i < PRODUCERS; i++) producers.push(await openProducer(scenario.dialect, url, names, i))
  const producer = producers[0]
  const committed = new Map()
  const seenAt = new Map()
  let warmId
  let warm
  const warmed = new Promise((r) => (warm = r))
  const publisher = noopPublisher((events) => {
    const now = performance.now()
    for (const e of events) {
      seenAt.set(e.id, now)
      if (e.id === warmId) warm()
    }
  })
  const relay = new lib.Relay({db, publisher, tables: names, batch: 100, concurrency, pollMs: scenario.pollMs, listen: scenario.listen ?? false, ...(scenario.leaseBy ? {leaseBy: scenario.leaseBy} : {})})
  const running = relay.start()
  try {
    // LISTEN: one event first, so the listener is attached before timing. Polling needs no
    // warm-up: the relay's first (empty) claim runs at start, then it sleeps like any idle poll.
    if (scenario.listen) {
      warmId = (await producer.order(true)).id
      if (seenAt.has(warmId)) warm()
      await warmed
    }
    const count = Math.round(RATE * seconds)
    const started = performance.now()
    let late = 0
    const idle = [...producers]
    const inFlight = new Set()
    for (let i = 0; i < count; i++) {
      const due = started + (i * 1000) / RATE
      await sleep(due - performance.now())
      while (idle.length === 0) await Promise.race(inFlight)
      if (performance.now() > due + 5) late++
      const p = idle.pop()
      const tx = p.order(true).then(({id, committingAt, committedAt}) => {
        committed.set(id, {committingAt, committedAt})
        inFlight.delete(tx)
        idle.push(p)
      })
      inFlight.add(tx)
    }
    await Promise.all(inFlight)
    const produceSeconds = (performance.now() - started) / 1000
    const deadline = performance.now() + scenario.pollMs * 3 + 5000
    while ([...committed.keys()].some((id) => !seenAt.has(id)) && performance.now() < deadline) await sleep(10)
    const missing = [...committed.keys()].filter((id) => !seenAt.has(id)).length
    if (missing) throw new Error(`${scenario.key}: relay did not see ${missing} of ${count} events`)
    // From COMMIT acknowledged (the commit as the producer knows it), and from COMMIT sent.
    const fromAck = [...committed].map(([id, c]) => seenAt.get(id) - c.committedAt)
    const fromSent = [...committed].map(([id, c]) => seenAt.get(id) - c.committingAt)
    const commitMs = [...committed.values()].map((c) => c.committedAt - c.committingAt)
    return {
      events: count,
      achievedRate: count / produceSeconds,
      late,
      p50: percentile(fromAck, 50),
      p99: percentile(fromAck, 99),
      max: Math.max(...fromAck),
      fromSentP50: percentile(fromSent, 50),
      fromSentP99: percentile(fromSent, 99),
      commitP50: percentile(commitMs, 50),
      commitP99: percentile(commitMs, 99),
    }
  } finally {
    await relay.stop()
    await running.catch(() => {})
    for (const p of producers) await p.close()
    await dropTables(db, names)
    await db.close()
  }
}

export default async function latency({quick, log}) {
  const seconds = quick ? 1 : 10
  const rounds = quick ? 2 : 3
  const wanted = quick ? SCENARIOS.filter((s) => (s.pollMs !== 1000 || s.listen) && !s.concurrency) : SCENARIOS
  const down = {mysql: await unreachable(MYSQL_URL)}
  if (down.mysql) log(`MariaDB skipped: ${down.mysql}`)
  const scenarios = wanted.filter((s) => !down[s.dialect])
  await ensurePgDatabase()
  const runs = Object.fromEntries(scenarios.map((s) => [s.key, []]))
  for (let round = 0; round < rounds; round++) {
    for (const scenario of scenarios) {
      const r = await measure(scenario, seconds)
      runs[scenario.key].push(r)
      log(`round ${round + 1}/${rounds} ${scenario.key}: p50 ${fmt(r.p50)} ms, p99 ${fmt(r.p99)} ms, commit p99 ${fmt(r.commitP99)} ms (${fmt(r.achievedRate, 0)} events/s)`)
    }
  }
  const figures = Object.fromEntries(
    scenarios.map((s) => [s.key, {p50: summary(runs[s.key].map((r) => r.p50)), p99: summary(runs[s.key].map((r) => r.p99)), rate: summary(runs[s.key].map((r) => r.achievedRate)), commitP99: summary(runs[s.key].map((r) => r.commitP99))}]),
  )
  return {
    title: 'End-to-end latency (producer commit -> publisher)',
    markdown: (quick ? `**Quick run**: ${seconds} s per run, ${rounds} rounds; the 1000 ms polling rows and the concurrency-2 row are left out.\n\n` : '') + markdown({seconds, rounds, figures, scenarios}) + (down.mysql ? `\n\nMariaDB skipped: ${down.mysql}` : ''),
    raw: {skipped: down,rate: RATE, seconds, rounds, targetP99Ms: TARGET_P99_MS, runs, figures},
  }
}

function markdown({seconds, rounds, figures, scenarios}) {
  const listen = figures['postgres-listen']
  const verdict =
    listen.p99.median < TARGET_P99_MS
      ? `Target met: p99 with LISTEN/NOTIFY ${fmt(listen.p99.median)} ms < ${TARGET_P99_MS} ms (median of the runs; worst run ${fmt(listen.p99.max)} ms).`
      : `**Target missed**: p99 with LISTEN/NOTIFY ${fmt(listen.p99.median)} ms ≥ ${TARGET_P99_MS} ms (median of the runs).`
  return [
    `${RATE} events/s for ${seconds} s per run, one producer transaction per event (insert an order row + \`writeEvent\`, COMMIT), dispatched on schedule to ${PRODUCERS} producer connections (open loop); the relay (batch 100, concurrency 1 unless stated, no-op publisher, its own pool) in the same process. Latency = the publisher's call − the moment the producer's COMMIT returned; the JSON also has it from the moment COMMIT was sent (\`fromSent*\`). ${rounds} runs per scenario, scenarios interleaved; each cell is the median (min–max) over the runs of that run's percentile. The COMMIT column is the producer's own commit time, a gauge of how busy the disk was.`,
    '',
    '| database | wake-up | p50 ms | p99 ms | producer COMMIT p99 ms | events/s achieved |',
    '|---|---|---|---|---|---|',
    ...scenarios.map((s) => {
      const f = figures[s.key]
      const wake = (s.listen ? `LISTEN/NOTIFY (+ poll ${s.pollMs} ms)` : `poll ${s.pollMs} ms`) + (s.relayUrl ? ', relay sessions `synchronous_commit = off`' : '') + (s.concurrency ? `, relay concurrency ${s.concurrency}` : '') + (s.leaseBy ? `, \`leaseBy: '${s.leaseBy}'\`` : '')
      return `| ${s.dialect === 'mysql' ? 'MariaDB' : s.dialect === 'postgres' ? 'PostgreSQL' : 'SQLite'} | ${wake} | ${spread(f.p50)} | ${spread(f.p99)} | ${spread(f.commitP99)} | ${spread(f.rate, 0)} |`
    }),
    '',
    verdict,
    '',
    'With polling, an event waits for the next poll: p50 is about half the interval and p99 about the whole of it, on every database. LISTEN/NOTIFY (PostgreSQL; `writeEvent` sends the NOTIFY inside the transaction, delivered at commit) removes that wait; polling stays as the safety net.',
    '',
    "What is left with LISTEN/NOTIFY is the relay's own cycle: an event committed while a claim -> publish -> mark cycle runs waits for it to end and for the next claim, and each batch ends in a durable commit (a WAL flush) on the relay's session: the claim that carries the previous batch's mark, or, with the transaction lease, the transaction that claimed, published and marked the batch. When the disk is busy (see the COMMIT column) those flushes make the tail. The `synchronous_commit = off` row sets it for the relay's sessions only (connection URL `?options=-c%20synchronous_commit%3Doff`); it is safe for the relay because a claim or mark lost in a server crash only means the event is sent again, which consumers dedupe by id — the producers' commits stay durable. The concurrency-2 row keeps durable commits and has a second claim loop asleep while the first is busy, so a NOTIFY is acted on at once; it shortens the wait, but each cycle still pays its flush.",
    '',
    'Reproduce: `npm run build && npm run bench -- latency`.',
  ].join('\n')
}

/** The figures `npm run bench -- compare` puts side by side: each scenario's p50 and p99, commit to publisher. */
export function headline(raw) {
  return Object.entries(raw.figures).flatMap(([key, f]) => [
    {key: `${key} p50`, label: `${key}: p50 ms, producer commit to publisher (median of ${f.p50.runs} runs)`, value: f.p50.median, better: 'lower'},
    {key: `${key} p99`, label: `${key}: p99 ms, producer commit to publisher (median of ${f.p99.runs} runs)`, value: f.p99.median, better: 'lower'},
  ])
}
