// The HTTP receiver with the http publisher on loopback and the inbox on PostgreSQL: 2xx only
// after commit, 500 on a handler error and 503 when the database is away (the relay retries),
// 400 for what is no CloudEvent (the relay fails it), as a Node handler, as Express-style
// middleware over a parsed body, and as a Fastify route handler.
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {randomBytes} from 'node:crypto'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {createHttpReceiver, type HttpReceiver} from '../../src/consume/http.js'
import {serveHttp} from '../../src/consume/http-server.js'
import {openDb} from '../../src/db/index.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import {structuredBody} from '../../src/publishers/http.js'
import {PG_URL} from '../helpers/targets.js'
import {claimed, exactlyOnce, fixture, type Fixture} from './fixture.js'

let fx: Fixture
beforeAll(async () => {
  fx = await fixture('chttp')
})
afterAll(async () => {
  await fx?.close()
})
const tag = () => randomBytes(2).toString('hex')

/** serveHttp on a free port; resolves its URL once listening. */
function serve(options: Parameters<typeof serveHttp>[1]) {
  let url!: (u: string) => void
  const listening = new Promise<string>((resolve) => (url = resolve))
  const running = serveHttp({url: 'http://127.0.0.1:0/events', onListening: url}, options)
  return {listening, running}
}

describe('http receiver behind serveHttp', () => {
  for (const mode of ['structured', 'binary'] as const) {
    it(`${mode}: each event applied once, resends answered 2xx as duplicates, maxEvents ends the run`, async () => {
      const events = claimed(8, tag())
      const {listening, running} = serve({db: fx.db, consumer: `http-${mode}`, tables: {inbox: fx.names.inbox}, handler: fx.record, concurrency: 4, maxEvents: 10})
      const publisher = new HttpPublisher({target: await listening, mode})
      expect(await publisher.publish(events)).toEqual(events.map(() => ({ok: true})))
      expect(await publisher.publish(events.slice(0, 2))).toEqual([{ok: true}, {ok: true}])
      expect(await running).toMatchObject({applied: 8, duplicate: 2, settled: 10, stopped: false})
      expect(exactlyOnce(await fx.counts(), events.map((e) => e.id))).toEqual({missing: [], repeated: []})
    })
  }

  it('a handler error is a 500 the relay retries, with nothing committed; the retry applies it', async () => {
    const [event] = claimed(1, tag())
    let calls = 0
    const controller = new AbortController()
    const {listening, running} = serve({
      db: fx.db,
      consumer: 'http-flaky',
      tables: {inbox: fx.names.inbox},
      signal: controller.signal,
      handler: async (e, tx) => {
        await fx.record(e, tx)
        if (++calls === 1) throw new Error('downstream busy')
      },
    })
    const publisher = new HttpPublisher({target: await listening})
    const [first] = await publisher.publish([event])
    expect(first).toMatchObject({ok: false, error: expect.stringMatching(/^HTTP 500.*downstream busy/)})
    expect(first).not.toHaveProperty('permanent', true)
    expect((await fx.counts()).has(event.id)).toBe(false)
    expect(await publisher.publish([event])).toEqual([{ok: true}])
    controller.abort()
    expect(await running).toMatchObject({applied: 1, retried: 1, stopped: true})
    expect((await fx.counts()).get(event.id)).toBe(1)
  })

  it('what is no CloudEvent is a 400 (the relay fails it at once); other paths 404, other methods 405', async () => {
    const controller = new AbortController()
    const {listening, running} = serve({db: fx.db, consumer: 'http-bad', tables: {inbox: fx.names.inbox}, handler: fx.record, signal: controller.signal})
    const url = await listening
    const bad = await fetch(url, {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"hello":1}'})
    expect(bad.status).toBe(400)
    expect(await bad.json()).toEqual({error: expect.stringMatching(/neither structured nor binary/)})
    expect((await fetch(url.replace('/events', '/other'), {method: 'POST', body: '{}'})).status).toBe(404)
    expect((await fetch(url)).status).toBe(405)
    const publisher = new HttpPublisher({target: url})
    controller.abort()
    expect(await running).toMatchObject({deadLettered: 1, applied: 0})
    // stopped: nothing listens any more
    expect((await publisher.publish(claimed(1, tag())))[0]).toMatchObject({ok: false, unreachable: true})
  })

  it('the database away is a 503, not a handler error', async () => {
    const db = await openDb(PG_URL, {poolSize: 1})
    const receiver = createHttpReceiver({db, consumer: 'http-down', tables: {inbox: fx.names.inbox}, handler: fx.record})
    await db.close()
    const [event] = claimed(1, tag())
    const answer = await receiver.receive({headers: {'content-type': 'application/cloudevents+json'}, body: structuredBody(event, 'test')})
    expect(answer.status).toBe(503)
    await receiver.close()
  })

  it('close(): the request in flight is answered 200 after its commit, later ones 503', async () => {
    const [slow, late] = claimed(2, tag())
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const receiver = createHttpReceiver({db: fx.db, consumer: 'http-close', tables: {inbox: fx.names.inbox}, handler: async (e, tx) => (await held, fx.record(e, tx))})
    const request = (e: typeof slow) => receiver.receive({headers: {'content-type': 'application/cloudevents+json'}, body: structuredBody(e, 'test')})
    const inFlight = request(slow)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const closed = receiver.close()
    expect((await request(late)).status).toBe(503)
    release()
    expect(await inFlight).toMatchObject({status: 200})
    await closed
    const counts = await fx.counts()
    expect([counts.get(slow.id), counts.has(late.id)]).toEqual([1, false])
  })
})

describe('http receiver inside frameworks', () => {
  let receiver: HttpReceiver
  beforeAll(() => {
    receiver = createHttpReceiver({db: fx.db, consumer: 'http-frameworks', tables: {inbox: fx.names.inbox}, handler: fx.record, concurrency: 2})
  })
  afterAll(() => receiver.close())

  it('Express-style middleware over a body that body-parser already parsed (binary mode)', async () => {
    // what express.json() leaves: req.body parsed, req._body set, the stream read
    const parsedJson = (req: IncomingMessage & {body?: unknown; _body?: boolean}, res: ServerResponse, next: (e?: unknown) => void) => {
      const chunks: Buffer[] = []
      req.on('data', (c) => chunks.push(c)).on('end', () => {
        req.body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
        req._body = true
        next()
      })
    }
    let passedOn: unknown
    const server = createServer((req, res) => parsedJson(req, res, () => receiver.handler(req, res, (error) => ((passedOn = error), res.writeHead(599).end()))))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const events = claimed(3, tag())
      const publisher = new HttpPublisher({target: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, mode: 'binary'})
      expect(await publisher.publish(events)).toEqual(events.map(() => ({ok: true})))
      expect(passedOn).toBeUndefined()
      expect(exactlyOnce(await fx.counts(), events.map((e) => e.id))).toEqual({missing: [], repeated: []})
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('a Fastify route handler: the answer goes through reply.code().header().send()', async () => {
    const [event] = claimed(1, tag())
    const sent: {status?: number; headers: Record<string, string>; body?: string} = {headers: {}}
    const reply = {
      code(status: number) {
        sent.status = status
        return reply
      },
      header(name: string, value: string) {
        sent.headers[name] = value
        return reply
      },
      send(body: string) {
        sent.body = body
      },
    }
    // Fastify with a string parser for application/cloudevents+json hands over the text
    await receiver.fastify({headers: {'content-type': 'application/cloudevents+json'}, body: structuredBody(event, 'test')}, reply)
    expect(sent).toEqual({status: 200, headers: {'content-type': 'application/json'}, body: JSON.stringify({id: event.id, outcome: 'applied'})})
  })
})
