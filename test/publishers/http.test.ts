// The http publisher against a real HTTP server on loopback, and the relay end to end with it.
import {createServer, type IncomingMessage, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import type {ClaimedEvent} from '../../src/relay/claim.js'
import {Relay} from '../../src/relay/relay.js'
import {count, seedEvents} from '../helpers/events.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

interface Received {
  headers: IncomingMessage['headers']
  body: string
  url: string
}

/** A loopback server that records requests and answers with respond(). */
async function server(respond: (r: Received) => {status: number; body?: string; delayMs?: number}) {
  const received: Received[] = []
  const s: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const r = {headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), url: req.url ?? ''}
      received.push(r)
      const answer = respond(r)
      setTimeout(() => res.writeHead(answer.status).end(answer.body ?? ''), answer.delayMs ?? 0)
    })
  })
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}/events`
  return {received, url, close: () => new Promise<void>((resolve) => s.close(() => resolve())), server: s}
}

function event(n: number, extra: Partial<ClaimedEvent> = {}): ClaimedEvent {
  return {
    id: `0190c3c2-0000-7000-8000-00000000000${n}`,
    eventType: 'order.created',
    aggregateType: 'order',
    aggregateId: `order-${n}`,
    aggregateVersion: n,
    payload: `{"n": ${n}, "big": 12345678901234567890}`,
    headers: '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","X-Custom":"no"}',
    createdAt: new Date('2026-01-31T12:00:00.123Z'),
    attempts: 1,
    ...extra,
  }
}

describe('http publisher', () => {
  it('structured mode: a CloudEvents 1.0 JSON body with the stored payload spliced in, Idempotency-Key = id', async () => {
    const s = await server(() => ({status: 202}))
    const publisher = new HttpPublisher({target: s.url, source: 'urn:test'})
    expect(await publisher.publish([event(1)])).toEqual([{ok: true}])
    await s.close()
    const [r] = s.received
    expect(r.headers['content-type']).toBe('application/cloudevents+json')
    expect(r.headers['idempotency-key']).toBe(event(1).id)
    expect(r.headers.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')
    // the payload's own text, byte for byte (a re-stringify would round the big number)
    expect(r.body).toContain('"data":{"n": 1, "big": 12345678901234567890}')
    const body = JSON.parse(r.body)
    expect(body).toMatchObject({
      specversion: '1.0',
      id: event(1).id,
      source: 'urn:test',
      type: 'order.created',
      subject: 'order-1',
      time: '2026-01-31T12:00:00.123Z',
      datacontenttype: 'application/json',
      aggregatetype: 'order',
      aggregateversion: 1,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    })
    // "X-Custom" is not a valid CloudEvents extension name
    expect(Object.keys(body)).not.toContain('x-custom')
  })

  it('binary mode: ce-* headers and the payload as the body', async () => {
    const s = await server(() => ({status: 200}))
    const publisher = new HttpPublisher({target: s.url, mode: 'binary'})
    expect(await publisher.publish([event(2)])).toEqual([{ok: true}])
    await s.close()
    const [r] = s.received
    expect(r.body).toBe(event(2).payload)
    expect(r.headers).toMatchObject({
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': event(2).id,
      'ce-type': 'order.created',
      'ce-source': 'outbox',
      'ce-subject': 'order-2',
      'ce-time': '2026-01-31T12:00:00.123Z',
      'ce-aggregateversion': '2',
      'idempotency-key': event(2).id,
    })
  })

  it('binary mode percent-encodes ce-* values (CloudEvents HTTP binding); a request fetch cannot build fails for good', async () => {
    const s = await server(() => ({status: 200}))
    const publisher = new HttpPublisher({target: s.url, mode: 'binary'})
    const unicode = event(3, {aggregateId: '订单-1 "Zürich" 100%'})
    const broken = event(4, {headers: '{"traceparent":"00-abc\\r\\nX-Injected: 1"}'})
    const [sent, refused] = await publisher.publish([unicode, broken])
    await s.close()
    expect(sent).toEqual({ok: true})
    expect(refused).toMatchObject({ok: false, permanent: true, error: expect.stringContaining('cannot be sent as it is')})
    expect(s.received).toHaveLength(1)
    expect(s.received[0].headers['ce-subject']).toBe('%E8%AE%A2%E5%8D%95-1%20%22Z%C3%BCrich%22%20100%25')
    expect(decodeURIComponent(String(s.received[0].headers['ce-subject']))).toBe('订单-1 "Zürich" 100%')
  })

  it('classifies answers per event: 2xx ok, 429/5xx/timeout/refused retryable, other 4xx permanent with the body', async () => {
    const byId: Record<string, {status: number; body?: string; delayMs?: number}> = {
      [event(1).id]: {status: 204},
      [event(2).id]: {status: 503, body: 'maintenance'},
      [event(3).id]: {status: 429},
      [event(4).id]: {status: 422, body: 'x'.repeat(2000)},
      [event(5).id]: {status: 200, delayMs: 1500},
    }
    const s = await server((r) => byId[String(r.headers['idempotency-key'])])
    const publisher = new HttpPublisher({target: s.url, timeoutMs: 500, maxErrorBody: 100})
    const results = await publisher.publish([1, 2, 3, 4, 5].map((n) => event(n)))
    expect(results[0]).toEqual({ok: true})
    expect(results[1]).toMatchObject({ok: false, error: expect.stringContaining('HTTP 503')})
    expect(results[1]).toMatchObject({error: expect.stringContaining('maintenance')})
    expect(results[2]).toMatchObject({ok: false, error: expect.stringContaining('HTTP 429')})
    expect((results[2] as {permanent?: boolean}).permanent).toBeUndefined()
    expect(results[3]).toMatchObject({ok: false, permanent: true, error: expect.stringMatching(/^HTTP 422 .*: x{100}…$/)})
    expect(results[4]).toMatchObject({ok: false, error: expect.stringContaining('timed out after 500ms')})
    expect((results[4] as {permanent?: boolean}).permanent).toBeUndefined()
    s.server.closeAllConnections()
    await s.close()
    // nothing listens any more: connection refused (or the pooled connection closed), retryable
    const [refused] = await publisher.publish([event(1)])
    expect(refused).toMatchObject({ok: false, error: expect.stringMatching(/ECONNREFUSED|UND_ERR_SOCKET|ECONNRESET/)})
    expect((refused as {permanent?: boolean}).permanent).toBeUndefined()
  })

  it('keeps at most `concurrency` requests in flight', async () => {
    let inFlight = 0
    let peak = 0
    const s = await server(() => ({status: 200, delayMs: 20}))
    s.server.on('request', (req) => {
      peak = Math.max(peak, ++inFlight)
      req.on('end', () => setTimeout(() => inFlight--, 19))
    })
    const publisher = new HttpPublisher({target: s.url, concurrency: 3})
    const events = Array.from({length: 9}, (_, i) => event(i))
    expect((await publisher.publish(events)).every((r) => r.ok)).toBe(true)
    await s.close()
    expect(peak).toBeLessThanOrEqual(3)
    expect(s.received).toHaveLength(9)
  })
})

const matrix = await targets()
for (const target of matrix) {
  describe.skipIf(!target.available)(`relay -> http on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `rh${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(() => closeTables(db, names))

    it('receiver down, then back: nothing is marked published that was not acknowledged, nothing is lost', async () => {
      const ids = await seedEvents(db, names, {count: 30})
      // a port with nothing listening
      const probe = await server(() => ({status: 200}))
      const port = new URL(probe.url).port
      await probe.close()
      const down = new HttpPublisher({target: `http://127.0.0.1:${port}/events`})
      const r1 = await new Relay({db, tables: names, publisher: down, batch: 10, backoff: {baseMs: 400, capMs: 400}}).drainOnce()
      expect(r1.published).toBe(0)
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(0)
      expect(await count(db, names, "last_error LIKE '%ECONNREFUSED%' AND failed_at IS NULL")).toBe(30)
      // no connection at all is an outage: the attempts are given back, none is used up
      expect(await count(db, names, 'attempts = 0')).toBe(30)
      await new Promise((resolve) => setTimeout(resolve, 450)) // the backoff passes
      // the receiver comes back (answers 500 for one event, first time only)
      let flaky = true
      const up = await server((r) => {
        if (flaky && r.headers['idempotency-key'] === ids[7]) {
          flaky = false
          return {status: 500}
        }
        return {status: 201}
      })
      const publisher = new HttpPublisher({target: up.url})
      const relay = new Relay({db, tables: names, publisher, batch: 10, backoff: {baseMs: 1, capMs: 1}})
      for (let i = 0; i < 50 && (await count(db, names, 'published_at IS NULL')) > 0; i++) {
        await relay.drainOnce()
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      await up.close()
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(30)
      const acked = new Set(up.received.map((r) => String(r.headers['idempotency-key'])))
      expect(acked).toEqual(new Set(ids))
      const rows = await db.query<{attempts: number}>(sql`SELECT attempts FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${ids[7]}`)
      // the 500 (an answer, so the event's own attempt) and the delivery; the outage counted none
      expect(Number(rows[0].attempts)).toBe(2)
    })
  })
}
