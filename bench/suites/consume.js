// Consumer throughput per broker (RabbitMQ, NATS JetStream, Redis Streams), the inbox on
// PostgreSQL: events/s applied by our runtime (consumeAmqp / consumeNats / consumeRedis: a
// Consumer whose transaction holds the inbox row and the handler's one INSERT, ack after commit)
// against, in the same run, the broker's plain client doing only receive + ack of the same kind
// of messages (the ceiling), and a hand-written loop on the plain client and a bare pg Client
// doing the same transaction per message (what the durable effect costs without our code).
// Every run drains a fresh queue / stream that OUR publisher filled; the three consumers run
// interleaved, the order rotated per round; ratios are per round. One more runtime run per
// broker at concurrency 1 is CPU-profiled: where its wall time goes.
// --quick: 2 rounds instead of 5, 200 events per run instead of 800 (2000 at concurrency 4).
import {loadavg} from 'node:os'
import {fmt, median, summary} from '../lib.js'
import {batched, BROKERS, claimedEvents, perMessage, topology} from '../consume-brokers.js'
import {profiled, shares, topFunctions} from '../cpu-share.js'
import {applyInit, dialectOf, driver, lib, openDb, raw, sql} from '../lib-under-test.js'

const PG_URL = process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const TARGET = 0.8
const TARGET_BROKERS = ['amqp', 'nats']
const CONCURRENCY = [1, 4]
// the what-if of the fix this suite points to: deliveries per inbox transaction, one savepoint
// each (PostgreSQL keeps 64 subtransactions per backend in shared memory, so well below that)
const BATCH = 16
/**
 * How each consumer drains a run's queue: its prefetch and the sink its messages go to. The
 * runtime keeps up to two messages in hand per handler (one handled, one waiting: the AMQP
 * prefetch, the NATS and Redis pumps' buffer), and so do the plain clients here.
 */
const inHand = (c) => 2 * c
const PLAIN = {
  ceiling: {prefetch: inHand, sink: (n) => perMessage(n)},
  hand: {prefetch: inHand, sink: (n, base, c) => perMessage(n, base.work, base.clients.slice(0, c))},
  batched: {prefetch: () => BATCH, sink: (n, base) => batched(n, base.workBatch, base.clients[0])},
  ceilingBatch: {prefetch: () => BATCH, sink: (n) => perMessage(n)},
}
/** The consumers run per concurrency, interleaved; the batched what-if at concurrency 1 only. */
const VARIANTS = {1: ['ceiling', 'hand', 'runtime', 'noDb', 'batched', 'ceilingBatch'], 4: ['ceiling', 'hand', 'runtime', 'noDb']}

/** The Db the runtime gets: the real one, with each transaction (BEGIN .. COMMIT) timed. */
function timedDb(db, clock) {
  const timed = Object.create(db)
  timed.transaction = async (fn, options) => {
    const started = performance.now()
    clock.first ??= started
    try {
      return await db.transaction(fn, options)
    } finally {
      clock.last = performance.now()
      clock.inTx += clock.last - started
      clock.transactions++
    }
  }
  return timed
}

/**
 * A Db that answers without a database: every inbox INSERT "inserts", every statement is a
 * no-op. The runtime on it measures our broker side and loop alone.
 */
function noDatabase(db) {
  const q = {query: async () => [], execute: async () => 1}
  const fake = Object.create(db)
  Object.assign(fake, q, {transaction: async (fn) => fn(q, q)})
  return fake
}

/** The database side: inbox and effects tables, one warm Db per concurrency, bare pg clients. */
async function database() {
  const tag = Math.random().toString(16).slice(2, 8)
  const names = {outbox: `bench_consume_${tag}`, inbox: `bench_consume_${tag}_in`, archive: `bench_consume_${tag}_ar`}
  const admin = await openDb(PG_URL, {poolSize: 1})
  await applyInit(admin, names, {inbox: true, archive: false})
  const d = dialectOf(admin)
  const effects = `${names.outbox}_fx`
  await admin.execute(sql`CREATE TABLE ${raw(effects)} (event_id TEXT NOT NULL, event_type TEXT NOT NULL)`)
  // the runtime's pool as `outbox consume` opens it (concurrency + 1), warmed up before any timing
  const dbs = {}
  for (const c of CONCURRENCY) {
    dbs[c] = await openDb(PG_URL, {poolSize: c + 1})
    await Promise.all(Array.from({length: c + 1}, () => dbs[c].transaction((tx) => tx.query(sql`SELECT 1`))))
  }
  const pg = await driver('pg')
  const clients = []
  for (let i = 0; i < Math.max(...CONCURRENCY); i++) {
    const client = new pg.Client({connectionString: PG_URL})
    await client.connect()
    clients.push(client)
  }
  // the hand-written loop sends the dialect's own inbox INSERT, its text compiled once
  const row = (eventId) => ({consumer: 'bench_hand', eventId, aggregateType: 'order', aggregateId: 'order-1', aggregateVersion: 1})
  const inbox = d.render.compile(lib.DIALECTS.postgres.events.inboxInsert(names, row('00000000-0000-7000-8000-000000000000')))
  if (JSON.stringify(inbox.params) !== JSON.stringify(Object.values(row('00000000-0000-7000-8000-000000000000')))) throw new Error(`bench: the inbox INSERT's parameters changed order: ${JSON.stringify(inbox.params)}`)
  const effect = `INSERT INTO ${effects} (event_id, event_type) VALUES ($1, $2)`
  // the hand-written transaction's statements, their round trips summed: where its time goes
  const split = {BEGIN: 0, inbox: 0, effect: 0, COMMIT: 0, transactions: 0}
  return {
    names,
    dbs,
    clients,
    handler: async (event, tx) => void (await tx.execute(sql`INSERT INTO ${raw(effects)} (event_id, event_type) VALUES (${event.id}, ${event.eventType})`)),
    split,
    async work(client, id) {
      let at = performance.now()
      const lap = (name) => {
        const now = performance.now()
        split[name] += now - at
        at = now
      }
      await client.query('BEGIN')
      lap('BEGIN')
      await client.query(inbox.text, Object.values(row(id)))
      lap('inbox')
      await client.query(effect, [id, 'order.created'])
      lap('effect')
      await client.query('COMMIT')
      lap('COMMIT')
      split.transactions++
    },
    async workBatch(client, ids) {
      await client.query('BEGIN')
      for (const id of ids) {
        // per message: a handler's error would roll back to here, and the others commit
        await client.query('SAVEPOINT outbox_event')
        await client.query(inbox.text, Object.values(row(id)))
        await client.query(effect, [id, 'order.created'])
        await client.query('RELEASE SAVEPOINT outbox_event')
      }
      await client.query('COMMIT')
    },
    async effectCount() {
      const [r] = await admin.query(sql`SELECT count(*) AS n FROM ${raw(effects)}`)
      return Number(r.n)
    },
    async close() {
      for (const client of clients) await client.end().catch(() => {})
      for (const db of Object.values(dbs)) await db.close().catch(() => {})
      await admin.execute(sql`DROP TABLE IF EXISTS ${raw(effects)}`).catch(() => {})
      for (const kind of ['inbox', 'outbox']) await admin.execute(sql`DROP TABLE IF EXISTS ${raw(d.render.table(names, kind))}`).catch(() => {})
      await admin.close()
    },
  }
}

/** One run: a fresh queue / stream with n events from our publisher, drained by `variant`. */
async function run(broker, variant, c, n, base, profile = false) {
  const t = await topology(broker)
  try {
    await t.publish(claimedEvents(n))
    await new Promise((resolve) => setTimeout(resolve, 200)) // the broker settles its writes
    if (PLAIN[variant]) {
      for (const k of Object.keys(base.split)) base.split[k] = 0
      const clock = await t.plain(PLAIN[variant].prefetch(c), PLAIN[variant].sink(n, base, c))
      const split = variant === 'hand' ? Object.fromEntries(['BEGIN', 'inbox', 'effect', 'COMMIT'].map((k) => [k, base.split[k] / base.split.transactions])) : undefined
      return {rate: (n / (clock.last - clock.first)) * 1000, ms: clock.last - clock.first, split}
    }
    const clock = {first: undefined, last: undefined, inTx: 0, transactions: 0}
    const options = {db: timedDb(variant === 'noDb' ? noDatabase(base.dbs[c]) : base.dbs[c], clock), consumer: 'bench_runtime', tables: {outbox: base.names.outbox, inbox: base.names.inbox}, handler: base.handler, concurrency: c, maxEvents: n}
    const called = performance.now()
    const drain = async () => {
      const s = await t.runtime(options)
      return {summary: s, wallMs: performance.now() - called}
    }
    const out = profile ? await profiled(drain, () => clock) : {result: await drain()}
    if (out.result.summary.applied !== n || clock.transactions !== n) throw new Error(`bench: ${broker} runtime applied ${out.result.summary.applied} of ${n} in ${clock.transactions} transactions`)
    const ms = clock.last - clock.first
    return {rate: (n / ms) * 1000, ms, txMs: clock.inTx / n, wallMs: out.result.wallMs, ...(profile ? {profile: shares(out), functions: topFunctions(out, 6)} : {})}
  } finally {
    await t.cleanup()
  }
}

export default async function consume({quick, log}) {
  if (typeof lib.consumeAmqp !== 'function') return {title: 'Consumer throughput', markdown: 'This build has no consumer runtimes (consumeAmqp).', raw: {}}
  const rounds = quick ? 2 : 5
  const events = {1: quick ? 200 : 800, 4: quick ? 200 : 2000}
  const loadBefore = loadavg()[0]
  const base = await database()
  const raw = {}
  try {
    for (const broker of Object.keys(BROKERS)) {
      raw[broker] = {}
      try {
        await (await topology(broker)).cleanup()
      } catch (error) {
        log(`${broker}: skipped (${error.message})`)
        raw[broker].skipped = error.message
        continue
      }
      for (const c of CONCURRENCY) {
        const n = events[c]
        const variants = VARIANTS[c]
        for (const variant of variants) await run(broker, variant, c, Math.min(n, 200), base) // warm-up: connections, JIT, plans
        const r = Object.fromEntries([...variants, 'txMs', 'wallMs', 'ratio', 'ratioHand', 'noDbRatio', 'batchedRatio', 'batchedRatioSame', 'batchedOverRuntime', 'handBEGIN', 'handinbox', 'handeffect', 'handCOMMIT'].map((k) => [k, []]))
        for (let i = 0; i < rounds; i++) {
          const order = variants.map((_, j, a) => a[(i + j) % a.length])
          const round = {}
          for (const variant of order) round[variant] = await run(broker, variant, c, n, base)
          for (const variant of variants) r[variant].push(round[variant].rate)
          r.txMs.push(round.runtime.txMs)
          r.wallMs.push(round.runtime.wallMs)
          r.ratio.push(round.runtime.rate / round.ceiling.rate)
          r.ratioHand.push(round.runtime.rate / round.hand.rate)
          r.noDbRatio.push(round.noDb.rate / round.ceiling.rate)
          for (const [k, ms] of Object.entries(round.hand.split)) r[`hand${k}`].push(ms)
          let batchText = ''
          if (round.batched) {
            r.batchedRatio.push(round.batched.rate / round.ceiling.rate)
            r.batchedRatioSame.push(round.batched.rate / round.ceilingBatch.rate)
            r.batchedOverRuntime.push(round.batched.rate / round.runtime.rate)
            batchText = `; ${BATCH} per transaction ${fmt(round.batched.rate, 0)}/s, ceiling at prefetch ${BATCH} ${fmt(round.ceilingBatch.rate, 0)}/s`
          }
          log(`${broker} c=${c} round ${i + 1}: ceiling ${fmt(round.ceiling.rate, 0)}/s, hand ${fmt(round.hand.rate, 0)}/s, runtime ${fmt(round.runtime.rate, 0)}/s, without database ${fmt(round.noDb.rate, 0)}/s (${fmt(round.runtime.rate / round.ceiling.rate, 2)}x ceiling, ${fmt(round.runtime.rate / round.hand.rate, 2)}x hand; transaction ${fmt(round.runtime.txMs, 2)} ms)${batchText}`)
        }
        raw[broker][c] = {events: n, ...Object.fromEntries(Object.entries(r).filter(([, v]) => v.length).map(([k, v]) => [k, summary(v)])), pairs: r.ratio}
      }
      const profile = await run(broker, 'runtime', 1, events[1], base, true)
      raw[broker].profile = {rate: profile.rate, txMs: profile.txMs, windowMs: profile.ms, groups: profile.profile, functions: profile.functions}
      log(`${broker} profile: ${profile.profile.slice(0, 4).map((g) => `${g.name} ${fmt(g.share * 100, 0)}%`).join(', ')}`)
    }
    const counted = await base.effectCount()
    log(`effects written by runtime and hand-written runs: ${counted}`)
  } finally {
    await base.close()
  }
  return {title: 'Consumer throughput (AMQP, NATS JetStream, Redis Streams; inbox on PostgreSQL)', markdown: markdown(raw, {quick, rounds, events, load: `${fmt(loadBefore, 1)} at the start, ${fmt(loadavg()[0], 1)} at the end`}), raw}
}

/** The section's text from the raw figures (also to re-render bench/results/consume.md from its .json). */
export function markdown(raw, {quick, rounds, events, load}) {
  const brokers = Object.keys(raw).filter((b) => !raw[b].skipped)
  const range = (x, digits = 2) => `${fmt(x.min, digits)}–${fmt(x.max, digits)}`
  const rows = []
  for (const broker of Object.keys(raw)) {
    if (raw[broker].skipped) {
      rows.push(`| ${broker} | | skipped: ${raw[broker].skipped} | | | | | | | |`)
      continue
    }
    for (const c of CONCURRENCY) {
      const r = raw[broker][c]
      const target = c === 1 && TARGET_BROKERS.includes(broker) ? (r.ratio.median >= TARGET ? 'met' : 'MISSED') : ''
      rows.push(`| ${broker} | ${c} | ${fmt(r.ceiling.median, 0)} | ${fmt(r.noDb.median, 0)} | ${fmt(r.hand.median, 0)} | ${fmt(r.runtime.median, 0)} | **${fmt(r.ratio.median, 2)}x** (${range(r.ratio)}) | ${fmt(r.noDbRatio.median, 2)}x (${range(r.noDbRatio)}) | ${fmt(r.ratioHand.median, 2)}x (${range(r.ratioHand)}) | ${target} |`)
    }
  }
  const perEvent = brokers.map((b) => {
    const r = raw[b][1]
    const cycle = 1000 / r.runtime.median
    return `| ${b} | ${fmt(1000 / r.ceiling.median, 2)} | ${fmt(cycle, 2)} | ${fmt(r.txMs.median, 2)} (${fmt((r.txMs.median / cycle) * 100, 0)}%) | ${fmt(cycle - r.txMs.median, 2)} | ${fmt(1000 / r.hand.median, 2)} | ${['BEGIN', 'inbox', 'effect', 'COMMIT'].map((k) => fmt(r[`hand${k}`].median, 2)).join(' / ')} |`
  })
  const batchRows = brokers.map((b) => {
    const r = raw[b][1]
    return `| ${b} | ${fmt(r.ceiling.median, 0)} | ${fmt(r.ceilingBatch.median, 0)} | ${fmt(r.runtime.median, 0)} | ${fmt(r.batched.median, 0)} | x${fmt(r.batchedOverRuntime.median, 1)} (${range(r.batchedOverRuntime, 1)}) | **${fmt(r.batchedRatio.median, 2)}x** (${range(r.batchedRatio)}) | ${fmt(r.batchedRatioSame.median, 2)}x (${range(r.batchedRatioSame)}) |`
  })
  const groupNames = [...new Set(brokers.flatMap((b) => raw[b].profile.groups.map((g) => g.name)))]
  const share = (b, name) => raw[b].profile.groups.find((g) => g.name === name)?.share ?? 0
  groupNames.sort((x, y) => brokers.reduce((sum, b) => sum + share(b, y) - share(b, x), 0))
  const profileRows = groupNames.map((name) => `| ${name} | ${brokers.map((b) => `${fmt(share(b, name) * 100, 1)}%`).join(' | ')} |`)
  const ours = (b) => raw[b].profile.groups.filter((g) => g.name.startsWith('ours')).reduce((sum, g) => sum + g.share, 0)
  const hottest = brokers.map((b) => `${b}: ${raw[b].profile.functions.slice(0, 4).map(([where, ms]) => `\`${where.replace(/ .*\//, ' ')}\` ${fmt((ms / raw[b].profile.windowMs) * 100, 1)}%`).join(', ')}`)
  return `${quick ? `**Quick run**: ${rounds} rounds, ${events[1]} events per run.\n\n` : ''}Each run drains a fresh queue / stream that our publisher (\`src/publishers\`) filled with
${events[1]} events (${events[4]} at concurrency 4), with one consumer; the consumers run interleaved, the
order rotated per round, ${rounds} rounds per broker and concurrency:

- **ceiling**: the broker's plain client doing only receive + ack, with as many messages in
  hand as the runtime keeps (2 per handler): amqplib \`consume\` with prefetch 2 x concurrency;
  nats.js \`consume({max_messages: 2 x concurrency})\` on a durable pull consumer; node-redis
  \`XREADGROUP COUNT 2 x concurrency\`, then \`XACK\`. RabbitMQ queues are quorum queues, as the
  runtime declares them;
- **hand-written**: the same plain client, and per message BEGIN, the dialect's inbox INSERT,
  the effect's INSERT and COMMIT on a bare pg \`Client\` (concurrency of them), then the ack;
- **runtime**: \`consumeAmqp\` / \`consumeNats\` / \`consumeRedis\` with a \`Consumer\` on a
  \`Db\` (pool of concurrency + 1, as \`outbox consume\` opens it), the handler doing one INSERT
  into an effects table in the inbox transaction, ack after commit;
- **runtime without database**: the same runtime on a \`Db\` whose transactions and statements
  are no-ops: our broker side, decoding and loop alone.

Events/s = events / (first message .. last ack; for the runtime, first transaction's BEGIN ..
last COMMIT), so connecting, declaring and stopping are left out. PostgreSQL runs with
\`synchronous_commit = on\`: every COMMIT waits for its WAL flush. Ratios are per round, median
(min–max). Target (issue 24): runtime at least ${TARGET}x the ceiling at concurrency 1 on AMQP and
NATS. Load average (2 cores, shared with other engineers' test runs): ${load}.

| broker | concurrency | ceiling (events/s) | runtime without database | hand-written | runtime | runtime / ceiling | without database / ceiling | runtime / hand-written | target |
|---|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

**Per event at concurrency 1** (ms, from the medians). The runtime's inbox transaction is timed
around \`Db.transaction\` (pool checkout, BEGIN, inbox INSERT, the handler's INSERT, COMMIT);
the rest is receiving, handing over and acking. The hand-written loop's statements are timed one
by one (round trip each):

| broker | ceiling | runtime | of which the inbox transaction | outside it | hand-written | its BEGIN / inbox / effect / COMMIT |
|---|---|---|---|---|---|---|
${perEvent.join('\n')}

**Where the runtime's wall time goes** at concurrency 1: one more run per broker under the V8
sampling profiler (250 µs), self time by file, counted between the first BEGIN and the last
COMMIT. "Idle" is the event loop waiting on PostgreSQL or the broker. On a loaded machine a
function's share includes the time its thread waited for a core.

| | ${brokers.join(' | ')} |
|---|${brokers.map(() => '---').join('|')}|
${profileRows.join('\n')}
| **all of our code (dist/)** | ${brokers.map((b) => `**${fmt(ours(b) * 100, 1)}%**`).join(' | ')} |

Hottest functions (self time, idle left out): ${hottest.join('; ')}.

**What-if: ${BATCH} deliveries per inbox transaction** (the fix proposed below, measured as a
hand-written loop at concurrency 1): prefetch ${BATCH}; while one batch's transaction runs the next
messages gather; per batch BEGIN, then per message SAVEPOINT, inbox INSERT, effect INSERT,
RELEASE SAVEPOINT (so one handler's error would roll back that message only), COMMIT, then the
acks. Ceilings at prefetch 2 and at prefetch ${BATCH} from the same rounds:

| broker | ceiling, prefetch 2 | ceiling, prefetch ${BATCH} | runtime (events/s) | ${BATCH} per transaction (events/s) | batched / runtime | batched / ceiling (prefetch 2) | batched / ceiling (prefetch ${BATCH}) |
|---|---|---|---|---|---|---|---|
${batchRows.join('\n')}

${findings(raw, brokers, ours)}
`
}

/** The reading of the tables above, its figures taken from them. */
function findings(raw, brokers, ours) {
  const c1 = (b) => raw[b][1]
  const span = (values, digits = 2, unit = '') => {
    const lo = Math.min(...values)
    const hi = Math.max(...values)
    return fmt(lo, digits) === fmt(hi, digits) ? `${fmt(lo, digits)}${unit}` : `${fmt(lo, digits)}–${fmt(hi, digits)}${unit}`
  }
  const target = TARGET_BROKERS.filter((b) => brokers.includes(b))
  const missed = target.filter((b) => c1(b).ratio.median < TARGET)
  const txShare = brokers.map((b) => (c1(b).txMs.median * c1(b).runtime.median) / 10)
  const commit = brokers.map((b) => c1(b).handCOMMIT.median)
  const trip = brokers.flatMap((b) => ['BEGIN', 'inbox', 'effect'].map((k) => c1(b)[`hand${k}`].median))
  const nats = brokers.includes('nats') ? c1('nats') : undefined
  // brokers whose plain client takes less per message than the quickest statement of that broker's own rounds
  const fast = brokers.filter((b) => 1000 / c1(b).ceiling.median < Math.min(...['BEGIN', 'inbox', 'effect'].map((k) => c1(b)[`hand${k}`].median)))
  return `**Findings.** ${missed.length ? `The target is missed on ${missed.join(' and ')}` : 'The target is met'}: at concurrency 1 the runtime applies ${target.map((b) => `${fmt(c1(b).ratio.median, 2)}x (${b})`).join(' and ')} of the plain client's receive + ack rate. The bound is the inbox transaction, one per event,
not our code: at concurrency 1 it takes ${span(txShare, 0, '%')} of the runtime's time per event. In the
hand-written loop its COMMIT alone takes ${span(commit, 1, ' ms')} (the WAL flush) and each other statement one
round trip of ${span(trip, 1, ' ms')} on this loaded machine, where the plain client needs
${span(brokers.map((b) => 1000 / c1(b).ceiling.median), 2, ' ms')} per message. Our own code (dist/) is
${span(brokers.map(ours).map((x) => x * 100), 1, '%')} of the runtime's wall time in the profile, and the runtime reaches
${span(brokers.map((b) => c1(b).ratioHand.median))}x of the hand-written loop that does the same transaction on a bare pg \`Client\` (the
medians; single rounds swing widely here, see the min–max).${fast.length ? ` On ${fast.join(' and ')} the plain client needs
less time per message than one PostgreSQL round trip takes here: a consumer that sends even one statement per
event cannot come near ${TARGET}x of that ceiling, batched or not (the what-if below reaches
${span(fast.map((b) => c1(b).batchedRatio.median))}x); for a durable effect the hand-written loop is the ceiling that can be met.` : ''}

The fix is to pay the flush once per several deliveries: one inbox transaction per batch of
deliveries, a SAVEPOINT per delivery (a handler's error rolls back to it: that delivery alone is
retried or dead-lettered, the others commit), every ack after the COMMIT, prefetch = batch x
concurrency, batch 1 being today's behaviour. The hand-written what-if does
${span(brokers.map((b) => c1(b).batchedOverRuntime.median), 1)} times the runtime's events/s. It is not in the runtime yet: it needs
\`Consumer\` to run one event inside a transaction it does not own (or several events in one),
which is \`Consumer\`'s part, being reworked on its own branch (the app's own executor); the
loop (\`src/consume/loop.ts\`) would then group what its source has ready.${nats ? ` Once the commit is
amortised, the broker side shows: the runtime without a database does ${fmt(nats.noDbRatio.median, 2)}x of the ceiling on
NATS at concurrency 1, its pump making one \`fetch\` (a pull request with its own subscription and
expiry) per message when one message is wanted at a time, where the plain client's \`consume()\`
keeps its pull open.` : ''}

The RabbitMQ runtime now keeps a spare message per handler (prefetch 2 x concurrency, was 1 x):
a quorum queue sends the next message only once the previous one is acked, which took several
milliseconds here, and that wait followed the inbox transaction instead of overlapping it. Before, the AMQP
runtime spent 8.8 ms per event outside its transaction at concurrency 1 (median of 5 rounds, load
average 20–26); a side-by-side of the two builds (300 events, 3 pairs, load average about 29)
gave 29–33 events/s before and 41–60 after.`
}

/** The figures `npm run bench -- compare` puts side by side: runtime / ceiling and runtime / hand-written per broker and concurrency. */
export function headline(raw) {
  const figures = []
  for (const [broker, r] of Object.entries(raw)) {
    for (const c of CONCURRENCY) {
      if (!r[c]) continue
      figures.push(
        {key: `${broker} c${c} runtime/ceiling`, label: `${broker}, concurrency ${c}: runtime / plain receive+ack (median of ${r[c].ratio.runs} rounds)`, value: r[c].ratio.median, better: 'higher'},
        {key: `${broker} c${c} runtime/hand`, label: `${broker}, concurrency ${c}: runtime / hand-written loop, same transaction (median)`, value: r[c].ratioHand.median, better: 'higher'},
        {key: `${broker} c${c} no-db/ceiling`, label: `${broker}, concurrency ${c}: runtime on a no-op database / plain receive+ack (median)`, value: r[c].noDbRatio.median, better: 'higher'},
      )
    }
  }
  return figures
}
