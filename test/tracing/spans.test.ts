// The rules around the one trace (one-trace.test.ts), on SQLite and the HTTP route, so they need
// no server: what writeEvent stores and when it leaves the caller's headers alone, a batch
// publish linking every event's stored context, a failed publish and a failed handler marked as
// errors, and a consumer's span under the app's own when the message carries no context.
import {context, createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace} from '@opentelemetry/api'
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {Consumer} from '../../src/consumer.js'
import type {Db} from '../../src/db/index.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import {Relay} from '../../src/relay/relay.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {sqliteUrl} from '../helpers/targets.js'
import {exporter, httpRoute, registerSdk, requestWriting, spansOf, tracer} from './helpers.js'

registerSdk()
beforeEach(() => exporter.reset())

const url = sqliteUrl()
let db: Db
let names: TableNames
beforeAll(async () => {
  ;({db, names} = await openTables(url, 'otsp', {inbox: true, archive: false}))
})
afterAll(() => closeTables(db, names))

const order = (headers?: Record<string, string>) => ({eventType: 'order.created', aggregateId: 'o-1', payload: {}, headers})

async function headersOf(id: string): Promise<unknown> {
  const [row] = await db.query<{headers: string | null}>(sql`SELECT headers FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${id}`)
  return row.headers === null ? null : JSON.parse(row.headers)
}

/** Each test's relay sees its own events only. */
async function clearOutbox(): Promise<void> {
  await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
}

describe('what writeEvent stores', () => {
  it("the request's traceparent and tracestate, added to the caller's other headers", async () => {
    const remote = {traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1, isRemote: true, traceState: createTraceState('vendor=v1')}
    const {request, id} = await context.with(trace.setSpanContext(ROOT_CONTEXT, remote), () => requestWriting(db, url, names, order({tenant: 't1'})))
    const {spanId} = request.spanContext()
    expect(await headersOf(id)).toEqual({tenant: 't1', traceparent: `00-${'a'.repeat(32)}-${spanId}-01`, tracestate: 'vendor=v1'})
    await clearOutbox()
  })

  it("the caller's own traceparent or tracestate as given, and nothing outside a span", async () => {
    const own = {traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'}
    expect(await headersOf((await requestWriting(db, url, names, order(own))).id)).toEqual(own)
    expect(await headersOf((await requestWriting(db, url, names, order({TraceState: 'x=1'}))).id)).toEqual({TraceState: 'x=1'})
    const {id} = await context.with(ROOT_CONTEXT, async () => {
      const {writeEventSync} = await import('../../src/producer.js')
      const Database = (await import('better-sqlite3')).default
      const database = new Database(url.slice('sqlite:'.length))
      try {
        return {id: database.transaction(() => writeEventSync(database, order(), {tables: names}))()}
      } finally {
        database.close()
      }
    })
    expect(await headersOf(id)).toBe(null)
    await clearOutbox()
  })
})

describe("the relay's span", () => {
  it('a batch publish is one span linked to every event it sends; one event is a child of its request', async () => {
    const written: Awaited<ReturnType<typeof requestWriting>>[] = []
    for (let i = 0; i < 3; i++) written.push(await requestWriting(db, url, names, order(), `POST /orders/${i}`))
    const route = await httpRoute(db, 'binary')
    try {
      const consuming = route.run({consumer: 'batch', tables: {inbox: names.inbox}, maxEvents: 3, handler: async () => {}})
      const publisher = route.publisher()
      // the relay sends a batch in two halves: two events, then one
      expect(await new Relay({db, publisher, tables: names}).drainOnce()).toMatchObject({published: 3})
      expect(await consuming).toMatchObject({applied: 3})
    } finally {
      await route.cleanup()
    }
    const sends = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.PRODUCER)
    expect(sends).toHaveLength(2)
    const [batch, single] = sends
    expect(batch.attributes).toMatchObject({'messaging.batch.message_count': 2, 'messaging.system': 'http'})
    expect(batch.attributes).not.toHaveProperty('messaging.message.id')
    expect(batch.links.map((l) => l.context.spanId)).toEqual(written.slice(0, 2).map((w) => w.request.spanContext().spanId))
    expect(single.parentSpanContext?.spanId).toBe(written[2].request.spanContext().spanId)
    expect(single.attributes['messaging.message.id']).toBe(written[2].id)
    // each consumer's span continues its own request's trace, batch or not
    for (const w of written) {
      const spans = spansOf(w.request.spanContext().traceId)
      const processed = spans.find((s) => s.kind === SpanKind.CONSUMER)
      expect(processed?.parentSpanContext?.spanId).toBe(w.request.spanContext().spanId)
      expect(processed?.attributes['messaging.message.id']).toBe(w.id)
    }
  })

  it('a publish the receiver refuses, or that cannot connect, ends the span as an error', async () => {
    await requestWriting(db, url, names, order())
    // nothing listens on port 9 here: retryable
    const unreachable = new Relay({db, publisher: new HttpPublisher({target: 'http://127.0.0.1:9/events', timeoutMs: 2000}), tables: names})
    expect(await unreachable.drainOnce()).toMatchObject({published: 0})
    const [send] = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.PRODUCER)
    expect(send.status).toMatchObject({code: SpanStatusCode.ERROR, message: expect.stringMatching(/^1 of 1 not sent: POST http:\/\/127.0.0.1:9\/events/)})
    expect(send.attributes['error.type']).toBe('retryable')
    await clearOutbox()
  })
})

describe("Consumer.handle's span", () => {
  it("without a context in the message: a child of the app's active span; a handler error marks it", async () => {
    const consumer = new Consumer(db, {consumer: 'direct', tables: names})
    const app = tracer().startSpan('job')
    await context.with(trace.setSpan(context.active(), app), async () => {
      const event = {id: '0190c3c2-0000-7000-8000-0000000000a1', headers: {traceparent: 'not-a-traceparent'}}
      await expect(consumer.handle(event, async () => Promise.reject(new Error('cannot bill')))).rejects.toThrow('cannot bill')
    })
    app.end()
    const [processed] = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER)
    expect(processed.name).toBe('process')
    expect(processed.parentSpanContext?.spanId).toBe(app.spanContext().spanId)
    expect(processed.status).toEqual({code: SpanStatusCode.ERROR, message: 'cannot bill'})
    expect(processed.events.map((e) => e.name)).toEqual(['exception'])
    expect(processed.attributes).not.toHaveProperty('messaging.system')
  })
})
