// The tracing tests' set-up: the real OpenTelemetry SDK with its in-memory exporter and the
// AsyncLocalStorage context manager, registered globally as an app would; a request span that
// writes one event in its transaction on any dialect; and the HTTP receiver as a route beside
// the brokers' topologies (test/consume/harness.ts).
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {context, trace, SpanKind, type Span} from '@opentelemetry/api'
import {AsyncLocalStorageContextManager} from '@opentelemetry/context-async-hooks'
import {BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan} from '@opentelemetry/sdk-trace-base'
import type {TableNames} from '../../dialects/index.js'
import {createHttpReceiver, type HttpReceiver} from '../../src/consume/http.js'
import type {ConsumeSummary} from '../../src/consume/loop.js'
import type {RuntimeOptions} from '../../src/consume/runtime.js'
import type {Db} from '../../src/db/index.js'
import {sqlitePath} from '../../src/db/url.js'
import {writeEvent, writeEventSync, type NewEvent} from '../../src/producer.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import type {Publisher} from '../../src/publishers/types.js'

export const exporter = new InMemorySpanExporter()

/** What an app's tracing set-up does: a provider, exporting each span as it ends, and a context manager. */
export function registerSdk(): void {
  trace.setGlobalTracerProvider(new BasicTracerProvider({spanProcessors: [new SimpleSpanProcessor(exporter)]}))
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
}

export const tracer = () => trace.getTracer('the-app')

/** The finished spans of one trace, oldest start first. */
export function spansOf(traceId: string): ReadableSpan[] {
  const toNanos = (t: [number, number]) => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1])
  return exporter
    .getFinishedSpans()
    .filter((s) => s.spanContext().traceId === traceId)
    .sort((a, b) => (toNanos(a.startTime) < toNanos(b.startTime) ? -1 : 1))
}

/**
 * A request span (kind SERVER) that writes `event` in a transaction on the dialect's own
 * executor: a Kysely transaction, or writeEventSync on better-sqlite3 for SQLite. Returns the
 * ended span and the event's id.
 */
export async function requestWriting(db: Db, url: string, names: TableNames, event: NewEvent, name = 'POST /orders'): Promise<{request: Span; id: string}> {
  const request = tracer().startSpan(name, {kind: SpanKind.SERVER})
  const id = await context.with(trace.setSpan(context.active(), request), () => write(db, url, names, event))
  request.end()
  return {request, id}
}

async function write(db: Db, url: string, tables: TableNames, event: NewEvent): Promise<string> {
  if (db.dialect.name !== 'sqlite') {
    const kysely = await db.kysely()
    return kysely.transaction().execute((trx) => writeEvent(trx, event, {tables}))
  }
  const Database = (await import('better-sqlite3')).default
  const database = new Database(sqlitePath(url))
  try {
    return database.transaction(() => writeEventSync(database, event, {tables}))()
  } finally {
    database.close()
  }
}

/** A publisher onto a route and the runtime that drains it, as test/consume/harness.ts's Topology. */
export interface Route {
  publisher(): Publisher
  run(options: Omit<RuntimeOptions, 'db'>): Promise<ConsumeSummary>
  cleanup(): Promise<void>
}

/** The http publisher POSTing to createHttpReceiver on a loopback server; each run() a new receiver. */
export async function httpRoute(db: Db, mode: 'structured' | 'binary' = 'structured'): Promise<Route> {
  let receiver: HttpReceiver | undefined
  const server: Server = createServer((req, res) => (receiver ? receiver.handler(req, res) : res.writeHead(503).end()))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`
  return {
    publisher: () => new HttpPublisher({target, mode, timeoutMs: 5000}),
    run(options) {
      receiver = createHttpReceiver({db, ...options})
      return receiver.done
    },
    async cleanup() {
      await receiver?.close()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
