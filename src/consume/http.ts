// HTTP runtime: a receiver for the http publisher's CloudEvents (structured or binary), usable
// as a Node http handler, as Express/Connect middleware and as a Fastify route handler. It
// answers 2xx only after the inbox transaction committed; a handler error is a 500 and an
// unreachable database a 503, so the relay retries with its backoff, and after its
// --max-attempts the event is failed in the outbox (outbox failed / replay): over HTTP the
// retry bound and the dead letters are the relay's. A request that is no CloudEvent is a 400,
// which the relay fails at once.
import type {IncomingMessage, ServerResponse} from 'node:http'
import {Consumer} from '../consumer.js'
import {decodeCloudEvent, type HttpHeaders, type HttpRequestLike} from './cloudevents.js'
import {MessageDecodeError} from './event.js'
import {errorText, type ConsumeSummary} from './loop.js'
import {checkRuntimeOptions, type RuntimeOptions} from './runtime.js'

export interface HttpReceiverOptions<E extends object = any> extends Omit<RuntimeOptions<E>, 'retryDelayMs' | 'maxAttempts' | 'signal' | 'maxBatch'> {
  /** longest request body read (default 2 MiB); a longer one is a 413 */
  maxBodyBytes?: number
}

export interface HttpAnswer {
  status: number
  body: string
}

/** Express/Connect's next, and what Fastify's reply offers. */
type Next = (error?: unknown) => void
interface FastifyRequestLike {
  headers: HttpHeaders
  body?: unknown
}
interface FastifyReplyLike {
  code(status: number): FastifyReplyLike
  header(name: string, value: string): FastifyReplyLike
  send(body: string): unknown
}

export interface HttpReceiver {
  /** the framework-neutral core: a request's headers and body to the answer to give */
  receive(request: HttpRequestLike): Promise<HttpAnswer>
  /** http.createServer(receiver.handler), or app.post('/events', receiver.handler) in Express */
  handler(req: IncomingMessage & {body?: unknown}, res: ServerResponse, next?: Next): void
  /** fastify.post('/events', receiver.fastify) (register a parser for application/cloudevents+json) */
  fastify(request: FastifyRequestLike, reply: FastifyReplyLike): Promise<void>
  /** answer 503 from now on; resolves once the requests in flight are answered */
  close(): Promise<void>
  readonly summary: ConsumeSummary
  /** resolves when maxEvents requests were settled (or close() was called) */
  readonly done: Promise<ConsumeSummary>
}

const DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
const HTTP_SOURCE = {system: 'http'}
const json = (status: number, body: object): HttpAnswer => ({status, body: JSON.stringify(body)})

export function createHttpReceiver<E extends object>(options: HttpReceiverOptions<E>): HttpReceiver {
  checkRuntimeOptions(options)
  const consumer = new Consumer(options.db, {consumer: options.consumer, tables: options.tables, checkVersion: options.checkVersion, dialect: options.dialect})
  const log = options.logger
  const summary: ConsumeSummary = {applied: 0, duplicate: 0, stale: 0, retried: 0, deadLettered: 0, settled: 0, stopped: false}
  const max = options.maxEvents ?? Infinity
  const slots = new Slots(Math.max(1, options.concurrency ?? 1))
  let closing = false
  let inFlight = 0
  let idle: (() => void) | undefined
  let finish!: (s: ConsumeSummary) => void
  const done = new Promise<ConsumeSummary>((resolve) => (finish = resolve))

  const settled = () => {
    summary.settled++
    if (summary.settled >= max) void receiver.close()
  }

  const handle = async (request: HttpRequestLike): Promise<HttpAnswer> => {
    let event
    try {
      event = decodeCloudEvent(request)
    } catch (error) {
      if (!(error instanceof MessageDecodeError)) throw error
      summary.deadLettered++
      settled()
      log?.warn('refused a request that is no outbox CloudEvent', {error: error.message})
      return json(400, {error: error.message})
    }
    try {
      const outcome = await consumer.handle(event, (tx) => options.handler(event, tx), HTTP_SOURCE)
      summary[outcome]++
      settled()
      return json(200, {id: event.id, outcome})
    } catch (error) {
      const reason = errorText(error)
      summary.retried++
      if (!(await consumer.reachable())) {
        log?.warn('the database cannot be reached; answered 503', {id: event.id, error: reason})
        return json(503, {error: 'the database cannot be reached'})
      }
      log?.warn('handler failed; answered 500 so the relay retries', {id: event.id, eventType: event.eventType, error: reason})
      return json(500, {error: reason})
    }
  }

  const receiver: HttpReceiver = {
    summary,
    done,
    async receive(request) {
      if (closing) return json(503, {error: 'the receiver is stopping'})
      inFlight++
      try {
        await slots.take()
        try {
          // checked again: a request that waited for a slot while the receiver closed takes no new work
          if (closing && summary.settled >= max) return json(503, {error: 'the receiver is stopping'})
          return await handle(request)
        } finally {
          slots.give()
        }
      } finally {
        if (--inFlight === 0) idle?.()
      }
    },
    handler(req, res, next) {
      const answer = (a: HttpAnswer) => {
        if (closing) res.setHeader('connection', 'close')
        res.writeHead(a.status, {'content-type': 'application/json'}).end(a.body)
      }
      if (req.method !== 'POST') return answer(json(405, {error: 'POST a CloudEvent'}))
      readBody(req, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES)
        .then((body) => (body === TOO_LARGE ? json(413, {error: 'the body is too large'}) : receiver.receive({headers: req.headers, body})))
        .then(answer, (error) => (next ? next(error) : answer(json(500, {error: errorText(error)}))))
    },
    async fastify(request, reply) {
      const a = await receiver.receive({headers: request.headers, body: request.body as HttpRequestLike['body']})
      reply.code(a.status).header('content-type', 'application/json').send(a.body)
    },
    async close() {
      if (!closing) {
        closing = true
        summary.stopped = summary.settled < max
      }
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve))
      finish(summary)
    },
  }
  return receiver
}

const TOO_LARGE = Symbol('too large')

/** The body as a framework left it (body-parser's req.body), else read from the stream. */
async function readBody(req: IncomingMessage & {body?: unknown; _body?: boolean}, maxBytes: number): Promise<HttpRequestLike['body'] | typeof TOO_LARGE> {
  // body-parser sets _body once it parsed; without it req.body may be a placeholder {}
  if (req._body === true || typeof req.body === 'string' || req.body instanceof Uint8Array) return req.body as HttpRequestLike['body']
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > maxBytes) return TOO_LARGE
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

/** At most n at once; the others wait their turn in order. */
class Slots {
  private waiting: (() => void)[] = []
  constructor(private free: number) {}

  async take(): Promise<void> {
    if (this.free > 0) {
      this.free--
      return
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve))
  }

  give(): void {
    const next = this.waiting.shift()
    if (next) next()
    else this.free++
  }
}
