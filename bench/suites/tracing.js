// Tracing's cost on the producer's hot path: writeEventSync on SQLite (no network, so the
// least to hide it) inside the app's active span, the event's traceparent either captured by
// writeEvent (@opentelemetry/api installed, an SDK registered) or passed by the caller by hand,
// which skips the capture and stores the same header: the difference is the capture alone.
import {randomUUID} from 'node:crypto'
import {context, trace} from '@opentelemetry/api'
import {AsyncLocalStorageContextManager} from '@opentelemetry/context-async-hooks'
import {BasicTracerProvider} from '@opentelemetry/sdk-trace-base'
import {driver, lib} from '../lib-under-test.js'
import {fmt, median, summary} from '../lib.js'
import {freshTables} from '../outbox.js'
import {spread} from '../report.js'
import {sqliteUrl} from '../servers.js'

const Database = await driver('better-sqlite3')

export default async function tracing({quick, log}) {
  // spans are recorded and sampled, and go nowhere: the exporter's cost is the app's, not ours
  trace.setGlobalTracerProvider(new BasicTracerProvider())
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  const tracer = trace.getTracer('bench')
  const perBlock = quick ? 2000 : 10_000
  const rounds = quick ? 3 : 5
  const url = sqliteUrl()
  const db = await lib.openDb(url)
  const names = await freshTables(db, 'trc')
  const database = new Database(url.replace(/^sqlite:/, ''), {timeout: 5000})
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  const write = database.transaction((event) => lib.writeEventSync(database, event, {tables: names}))
  const order = (headers) => ({eventType: 'order.created', aggregateId: randomUUID(), payload: {totalCents: 1999}, headers})

  /** One request span writing one event; `byHand`: the caller passes the span's traceparent itself. */
  const request = (byHand) => {
    const span = tracer.startSpan('POST /orders')
    const started = performance.now()
    context.with(trace.setSpan(context.active(), span), () => {
      const c = span.spanContext()
      write(order(byHand ? {traceparent: `00-${c.traceId}-${c.spanId}-01`} : undefined))
    })
    const ms = performance.now() - started
    span.end()
    return ms
  }

  const runs = []
  try {
    for (let i = 0; i < 500; i++) request(i % 2 === 0) // warm-up
    for (let r = 0; r < rounds; r++) {
      const ms = {captured: [], byHand: []}
      // alternating one by one, so drift on a shared machine hits both alike
      for (let i = 0; i < perBlock * 2; i++) {
        const byHand = (i % 2 === 0) === (r % 2 === 0)
        ms[byHand ? 'byHand' : 'captured'].push(request(byHand))
      }
      const m = {byHandUs: median(ms.byHand) * 1000, capturedUs: median(ms.captured) * 1000}
      runs.push({...m, ratio: m.capturedUs / m.byHandUs, addedUs: m.capturedUs - m.byHandUs})
      log(`round ${r + 1}/${rounds}: ${fmt(m.byHandUs, 1)} µs by hand, ${fmt(m.capturedUs, 1)} µs captured (x${fmt(m.capturedUs / m.byHandUs, 3)})`)
    }
  } finally {
    database.close()
    await db.close()
  }
  const figures = Object.fromEntries(['byHandUs', 'capturedUs', 'ratio', 'addedUs'].map((k) => [k, summary(runs.map((x) => x[k]))]))
  return {
    title: 'Tracing on the producer (writeEvent capturing the active span\'s context)',
    markdown: [
      `One transaction = \`writeEventSync\` of one event on SQLite (better-sqlite3, WAL, synchronous = NORMAL) inside an active span of the real OpenTelemetry SDK (recorded, sampled, exported nowhere). "Captured": the event has no headers and writeEvent adds the span's \`traceparent\`; "by hand": the caller passes the same \`traceparent\`, so writeEvent captures nothing and stores the same header. ${rounds} rounds of ${perBlock} transactions of each, alternating one by one, each timed; a round's figure is the median. Cells: median (min–max) over the rounds.`,
      '',
      '| µs/tx, traceparent by hand | µs/tx, captured | captured ÷ by hand | added µs/tx |',
      '|---|---|---|---|',
      `| ${spread(figures.byHandUs)} | ${spread(figures.capturedUs)} | ${spread(figures.ratio, 3)} | ${spread(figures.addedUs, 2)} |`,
      '',
      'Not measured here: without `@opentelemetry/api` installed, writeEvent looks for it once per process and then pays one comparison per event (src/core/opentelemetry.ts).',
      '',
      'Reproduce: `npm run build && npm run bench -- tracing`.',
    ].join('\n'),
    raw: {perBlock, rounds, runs, figures},
  }
}
