// The loopback broker the harness hosts between relay and consumer: an HTTP server on
// 127.0.0.1 that accepts the http publisher's CloudEvents POSTs, keeps every message it
// accepted, hands them to consumers (GET /next, long poll) and redelivers a message until it
// is acknowledged (POST /ack): a consumer killed before acking gets it again.
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo, Socket} from 'node:net'

export interface BrokerMessage {
  tag: number
  /** the CloudEvents envelope as received */
  event: CloudEvent
  deliveries: number
  state: 'ready' | 'inflight' | 'acked'
  /** inflight: redeliver after this time */
  deadline: number
}

export interface CloudEvent {
  id: string
  type?: string
  subject?: string
  aggregatetype?: string | null
  aggregateversion?: number | string | null
  data?: unknown
  [key: string]: unknown
}

export interface BrokerStats {
  /** publishes accepted (a resend of the same id counts again) */
  accepted: number
  /** publishes answered with an error (outage, poison) or refused */
  rejected: number
  /** messages handed to consumers, redeliveries included */
  delivered: number
  acked: number
}

export interface LoopbackBrokerOptions {
  /** an unacknowledged message is redelivered after this long (default 1500 ms) */
  redeliverMs?: number
}

export class LoopbackBroker {
  private server?: Server
  private port = 0
  private readonly sockets = new Set<Socket>()
  private messages: BrokerMessage[] = []
  private nextTag = 1
  private waiters: (() => void)[] = []
  private unavailable: 'no' | '503' = 'no'
  private holding = false
  private readonly rejectIds = new Set<string>()
  readonly acceptedById = new Map<string, number>()
  readonly stats: BrokerStats = {accepted: 0, rejected: 0, delivered: 0, acked: 0}
  private readonly redeliverMs: number

  constructor(options: LoopbackBrokerOptions = {}) {
    this.redeliverMs = options.redeliverMs ?? 1500
  }

  /** Listens on 127.0.0.1 (a free port the first time, the same port after an outage). */
  async start(): Promise<string> {
    const server = createServer((req, res) => void this.route(req, res).catch(() => res.destroy()))
    server.keepAliveTimeout = 1000
    server.on('connection', (s) => {
      this.sockets.add(s)
      s.on('close', () => this.sockets.delete(s))
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.server = server
    this.port = (server.address() as AddressInfo).port
    return this.url
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** Stops listening and drops every connection: clients get "connection refused". */
  async stop(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (!server) return
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    this.wake()
  }

  /** 503 to every publish while set. */
  setUnavailable(on: boolean): void {
    this.unavailable = on ? '503' : 'no'
  }

  /** Publishes of this event id are rejected (503) forever: a poison message. */
  reject(id: string): void {
    this.rejectIds.add(id)
  }

  /** Accept, but deliver nothing until release(). */
  hold(): void {
    this.holding = true
  }

  /** Deliver what was held; `reverse` hands the newest messages out first (out of order). */
  release(options: {reverse?: boolean} = {}): void {
    if (!this.holding) return
    this.holding = false
    if (options.reverse) this.messages.reverse()
    this.wake()
  }

  /** A consumer died: everything it had not acknowledged is delivered again, first. */
  requeueUnacked(): void {
    const inflight = this.messages.filter((m) => m.state === 'inflight')
    for (const m of inflight) m.state = 'ready'
    this.messages = [...inflight, ...this.messages.filter((m) => m.state !== 'ready' || !inflight.includes(m))]
    this.wake()
  }

  /** Nothing ready and nothing unacknowledged. */
  idle(): boolean {
    return this.messages.every((m) => m.state === 'acked')
  }

  /** Publishes accepted that were never acknowledged by a consumer. */
  unacked(): BrokerMessage[] {
    return this.messages.filter((m) => m.state !== 'acked')
  }

  private wake(): void {
    const waiters = this.waiters
    this.waiters = []
    for (const w of waiters) w()
  }

  private take(): BrokerMessage | undefined {
    if (this.holding) return undefined
    const now = Date.now()
    for (const m of this.messages) {
      if (m.state === 'inflight' && m.deadline <= now) m.state = 'ready'
    }
    const m = this.messages.find((x) => x.state === 'ready')
    if (!m) return undefined
    m.state = 'inflight'
    m.deadline = now + this.redeliverMs
    m.deliveries++
    this.stats.delivered++
    return m
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://broker')
    if (req.method === 'GET' && url.pathname === '/next') return this.next(res, Math.min(Number(url.searchParams.get('wait') ?? 0) || 0, 5000))
    if (req.method === 'POST' && url.pathname === '/ack') {
      const m = this.messages.find((x) => x.tag === Number(url.searchParams.get('tag')))
      if (m && m.state === 'inflight') {
        m.state = 'acked'
        this.stats.acked++
      }
      return void res.writeHead(m ? 204 : 404).end()
    }
    if (req.method === 'GET' && url.pathname === '/health') return void res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify(this.stats))
    if (req.method !== 'POST') return void res.writeHead(405).end()
    const body = await readBody(req)
    if (this.unavailable === '503') {
      this.stats.rejected++
      return void res.writeHead(503, {'retry-after': '1'}).end('broker unavailable (chaos)')
    }
    let event: CloudEvent
    try {
      event = JSON.parse(body) as CloudEvent
    } catch {
      return void res.writeHead(400).end('body is not JSON')
    }
    const type = String(req.headers['content-type'] ?? '')
    if (!type.startsWith('application/cloudevents+json') || typeof event?.id !== 'string' || event.specversion !== '1.0') {
      return void res.writeHead(400).end('expected a CloudEvents 1.0 structured-mode event')
    }
    if (this.rejectIds.has(event.id)) {
      this.stats.rejected++
      return void res.writeHead(503).end('poison message rejected (chaos)')
    }
    this.stats.accepted++
    this.acceptedById.set(event.id, (this.acceptedById.get(event.id) ?? 0) + 1)
    this.messages.push({tag: this.nextTag++, event, deliveries: 0, state: 'ready', deadline: 0})
    this.wake()
    res.writeHead(202, {'content-type': 'application/json'}).end('{"accepted":true}')
  }

  private async next(res: ServerResponse, waitMs: number): Promise<void> {
    let m = this.take()
    if (!m && waitMs > 0) {
      const until = Date.now() + waitMs
      while (!m && Date.now() < until && this.server) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(200, until - Date.now()))
          this.waiters.push(() => {
            clearTimeout(timer)
            resolve()
          })
        })
        if (res.destroyed) return
        m = this.take()
      }
    }
    if (!m) return void res.writeHead(204).end()
    res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({tag: m.tag, deliveries: m.deliveries, event: m.event}))
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}
