// One trace from the app's request span to the consumer's handler, with the relay's PRODUCER
// span in between, through the real brokers (AMQP, NATS JetStream, Redis Streams) and HTTP
// CloudEvents, on PostgreSQL, MariaDB and SQLite, with the real OpenTelemetry SDK: writeEvent
// stores the request's context, the relay publishes in a child span of it, the message carries
// that same starting context, and the consumer's span is its child around the handler.
import {randomBytes} from 'node:crypto'
import {SpanKind, SpanStatusCode, trace, type SpanContext} from '@opentelemetry/api'
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {Relay} from '../../src/relay/relay.js'
import {TOPOLOGIES} from '../consume/harness.js'
import {broker, type BrokerName} from '../helpers/brokers.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {targets} from '../helpers/targets.js'
import {exporter, httpRoute, registerSdk, requestWriting, spansOf, type Route} from './helpers.js'

registerSdk()
beforeEach(() => exporter.reset())

const ROUTES = ['amqp', 'nats', 'redis', 'http'] as const
type RouteName = (typeof ROUTES)[number]
const SYSTEM: Record<RouteName, string> = {amqp: 'rabbitmq', nats: 'nats', redis: 'redis', http: 'http'}
const brokers = Object.fromEntries(await Promise.all((['amqp', 'nats', 'redis'] as BrokerName[]).map(async (name) => [name, await broker(name)])))
const available = (route: RouteName) => route === 'http' || brokers[route].available

async function openRoute(route: RouteName, db: Db): Promise<Route> {
  return route === 'http' ? httpRoute(db) : TOPOLOGIES[route](db)
}

/** The event's stored headers, as writeEvent wrote them. */
async function storedHeaders(db: Db, names: TableNames, id: string): Promise<Record<string, string>> {
  const [row] = await db.query<{headers: unknown}>(sql`SELECT headers FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${id}`)
  return typeof row.headers === 'string' ? JSON.parse(row.headers) : (row.headers as Record<string, string>)
}

const traceparentOf = (c: SpanContext) => `00-${c.traceId}-${c.spanId}-0${c.traceFlags}`

for (const target of await targets()) {
  describe.skipIf(!target.available)(`one trace on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    const routes: Route[] = []
    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `otel${target.dialect.slice(0, 2)}`, {inbox: true, archive: false}))
    })
    afterAll(async () => {
      for (const r of routes) await r.cleanup().catch(() => {})
      await closeTables(db, names)
    })

    for (const route of ROUTES) {
      it.skipIf(!available(route))(`${route}: request -> relay's send span -> consumer's process span around the handler`, async () => {
        const r = await openRoute(route, db)
        routes.push(r)
        const {request, id} = await requestWriting(db, target.url, names, {eventType: 'order.created', aggregateId: `o-${randomBytes(3).toString('hex')}`, payload: {n: 1}})
        const started = request.spanContext()
        // captured when written, inside the request: the request's own context
        expect(await storedHeaders(db, names, id)).toEqual({traceparent: traceparentOf(started)})

        let inHandler: {span?: SpanContext; headers?: Record<string, string>} = {}
        // consuming from the start: the HTTP receiver must be there when the relay POSTs
        const consuming = r.run({
          consumer: `traced_${route}`,
          tables: {inbox: names.inbox},
          maxEvents: 1,
          handler: async (event) => {
            inHandler = {span: trace.getActiveSpan()?.spanContext(), headers: event.headers}
          },
        })
        const publisher = r.publisher()
        const relay = new Relay({db, publisher, tables: names})
        expect(await relay.drainOnce()).toMatchObject({published: 1, retried: 0, failed: 0})
        await publisher.close()
        expect(await consuming).toMatchObject({applied: 1, settled: 1})
        // the message carried the starting context, not the relay's
        expect(inHandler.headers?.traceparent).toBe(traceparentOf(started))

        const spans = spansOf(started.traceId)
        expect(spans.map((s) => [s.name, SpanKind[s.kind]])).toEqual([
          ['POST /orders', 'SERVER'],
          [expect.stringMatching(/^send /), 'PRODUCER'],
          [expect.stringMatching(/^process/), 'CONSUMER'],
        ])
        const [, send, processed] = spans
        expect(send.parentSpanContext?.spanId).toBe(started.spanId)
        expect(send.attributes).toMatchObject({'messaging.system': SYSTEM[route], 'messaging.operation.type': 'send', 'messaging.message.id': id, 'messaging.destination.name': expect.any(String)})
        expect(send.status.code).not.toBe(SpanStatusCode.ERROR)
        expect(processed.parentSpanContext?.spanId).toBe(started.spanId)
        expect(processed.attributes).toMatchObject({
          'messaging.system': SYSTEM[route],
          'messaging.operation.type': 'process',
          'messaging.message.id': id,
          'messaging.consumer.group.name': `traced_${route}`,
          'outbox.consume.outcome': 'applied',
        })
        // the handler ran inside the consumer's span
        expect(inHandler.span?.spanId).toBe(processed.spanContext().spanId)
      })
    }
  })
}
