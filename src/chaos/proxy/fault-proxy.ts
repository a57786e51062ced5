// A TCP proxy in the harness, between worker processes and a real server (database or broker):
// it passes bytes through, delays them, black-holes them (accepts, reads, never answers, never
// resets; a connection it swallowed bytes of stays silent for good), or cuts connections (a TCP
// reset). With the server's wire part (dialects/wire.ts) it
// follows the client's statements and cuts a connection at a protocol moment: when the client
// sends a statement (COMMIT), before the server sees it, or once the server has answered it,
// the answer dropped (the client never learns whether its COMMIT happened). Before a broker, with
// the broker's protocol (acks.ts), it holds back the publish acknowledgements alone.
import {connect, createServer, type AddressInfo, type Server, type Socket} from 'node:net'
import type {WirePart, WireReader, WireTarget} from '../../../dialects/index.js'
import {ackReader, type AckProtocol, type AckReader} from './acks.js'

/**
 * pass, delay every chunk, delay the broker's publish acks alone (a proxy made with an ack
 * protocol), black-hole (read, never answer, never reset), or refuse: every connection reset,
 * open ones at once and new ones as they come (the server is down)
 */
export type ProxyMode = {kind: 'pass'} | {kind: 'delay'; ms: number} | {kind: 'delay-acks'; ms: number} | {kind: 'blackhole'} | {kind: 'refuse'}

/** A cut at a statement: which one, and whether the server runs it first. */
export interface StatementCut {
  matches(sql: string): boolean
  /** before-server: the statement never reaches the server; after-answer: it runs, its answer is dropped */
  moment: 'before-server' | 'after-answer'
  /** cut at the nth statement matching (default 1st), counted over every connection; then the rule is spent */
  nth?: number
}

export interface ProxyStats {
  connections: number
  /** connections cut (cutAll and statement cuts) */
  cuts: number
  /** statements cut at */
  statementCuts: number
  /** connections whose protocol the reader could not follow (TLS): no statement cut there */
  opaque: number
  /** chunks a black hole swallowed, from clients and from the server */
  swallowed: number
  /** connections a client closed itself while a black hole held what it had sent (it gave up on its request) */
  abandoned: number
  /** connections reset on arrival in refuse mode */
  refused: number
  /** publish acks passed to clients, held back or not (a proxy made with an ack protocol) */
  acks: number
  /** publish acks held back (delay-acks) */
  delayedAcks: number
  /** of those, acks of a publish the broker already had (a resend it dropped) */
  duplicateAcks: number
}

class Link {
  /** the server's next bytes answer a statement cut after its answer: drop them and cut */
  cutOnAnswer = false
  /** a black hole swallowed bytes of the client's: its request will never be answered */
  swallowedRequest = false
  /**
   * a black hole swallowed bytes on it, either way: it stays a black hole whatever the mode (the
   * bytes it lost leave its stream out of step, as a connection a dead route drops stays hung),
   * and the server's end of it never reaches the client: its client must give up on it itself
   */
  holed = false
  /** the proxy cut (or saw the server end) the link: a close that follows is not the client's own */
  ended = false
  /** the server's units held back, in order, and the timer that lets the first go */
  readonly held: {at: number; bytes: Buffer}[] = []
  releasing?: NodeJS.Timeout
  constructor(
    readonly client: Socket,
    readonly server: Socket,
    readonly reader?: WireReader,
    readonly acks?: AckReader,
  ) {}

  cut(): void {
    this.ended = true
    for (const s of [this.client, this.server]) cutSocket(s)
  }
}

/**
 * A reset where the socket is connected and open both ways. One still connecting can only be
 * destroyed; so can one whose end has begun (the peer's FIN came, or end() was called): libuv
 * refuses a reset while a shutdown is under way, and Node then drops the handle without closing
 * it, an open socket that keeps the harness's process from exiting.
 */
export function cutSocket(s: Socket): void {
  if (s.destroyed) return
  if (s.connecting || s.writableEnded) return void s.destroy()
  try {
    s.resetAndDestroy()
  } catch {
    s.destroy()
  }
}

export class FaultProxy {
  port = 0
  /** delayed chunks not forwarded yet */
  inFlight = 0
  readonly stats: ProxyStats = {connections: 0, cuts: 0, statementCuts: 0, opaque: 0, swallowed: 0, abandoned: 0, refused: 0, acks: 0, delayedAcks: 0, duplicateAcks: 0}
  private mode: ProxyMode = {kind: 'pass'}
  private rule?: StatementCut & {seen: number}
  private server?: Server
  private readonly links = new Set<Link>()
  private readonly cutWaiters: (() => void)[] = []
  private readonly ackWaiters: (() => void)[] = []
  /** the answers the delay modes delay are held until releaseAnswers() */
  private gated = false
  /** when the oldest answer still held by holdAnswers() came (0: none) */
  gatedSince = 0

  constructor(
    private readonly target: WireTarget,
    private readonly wire?: WirePart,
    /** the broker's protocol, read for delay-acks from the first byte of every connection */
    private readonly acks?: AckProtocol,
  ) {}

  /** Listens on 127.0.0.1 (a free port unless one is given); resolves with the port. */
  async start(port = 0): Promise<number> {
    const server = createServer((client) => this.accept(client))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
    this.server = server
    this.port = (server.address() as AddressInfo).port
    return this.port
  }

  /** From now on, for open connections and new ones. */
  setMode(mode: ProxyMode): void {
    this.mode = mode
    if (mode.kind === 'refuse') this.cutAll()
  }

  /**
   * From now on, what delay and delay-acks would delay on its way to the client (the server's
   * bytes; its publish acks) is held, however long, until releaseAnswers(): a fault that lasts
   * until it was hit, not for a fixed time.
   */
  holdAnswers(): void {
    this.gated = true
  }

  /** Lets every answer held by holdAnswers() go at once; later ones are delayed as the mode says. */
  releaseAnswers(): void {
    this.gated = false
    this.gatedSince = 0
    const now = Date.now()
    for (const link of this.links) {
      for (const unit of link.held) if (unit.at === Infinity) unit.at = now
      this.release(link)
    }
  }

  /** Arms a cut at the next statement(s) matching; replaces an armed one. */
  cutAt(rule: StatementCut): void {
    this.rule = {...rule, seen: 0}
  }

  /** Resolves once a statement cut happened (at once when one already did). */
  statementCut(): Promise<void> {
    if (this.stats.statementCuts > 0) return Promise.resolve()
    return new Promise((resolve) => this.cutWaiters.push(resolve))
  }

  /**
   * Resolves once a publish ack went to a client (a proxy made with an ack protocol; at once when
   * one did): in the same turn as its bytes, so that a mode set then meets the client's next request.
   */
  acked(): Promise<void> {
    if (this.stats.acks > 0) return Promise.resolve()
    return new Promise((resolve) => this.ackWaiters.push(resolve))
  }

  /** Resets every open connection (new ones are accepted as the mode says). */
  cutAll(): void {
    for (const link of this.links) this.cutLink(link)
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const link of this.links) link.cut()
    this.links.clear()
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  private accept(client: Socket): void {
    this.stats.connections++
    if (this.mode.kind === 'refuse') {
      this.stats.refused++
      client.on('error', () => {})
      client.resetAndDestroy()
      return
    }
    const server = connect({host: this.target.host, port: this.target.port})
    const link = new Link(client, server, this.wire?.reader(), this.acks && ackReader(this.acks))
    this.links.add(link)
    // before the handlers below cut the link: the client's own end, reset or close
    const gaveUp = () => {
      if (!link.swallowedRequest || link.ended) return
      link.ended = true
      this.stats.abandoned++
    }
    for (const event of ['end', 'error', 'close']) client.on(event, gaveUp)
    // the server's end of a held connection goes nowhere: its client is left hanging
    const serverGone = (s: Socket) => s === server && link.holed && !client.destroyed
    for (const s of [client, server]) {
      s.setNoDelay(true)
      s.on('error', () => serverGone(s) || link.cut())
      s.on('close', () => {
        if (serverGone(s)) return
        link.cut()
        this.links.delete(link)
        clearTimeout(link.releasing)
        this.inFlight -= link.held.splice(0).length
      })
    }
    client.on('data', (chunk: Buffer) => this.fromClient(link, chunk))
    server.on('data', (chunk: Buffer) => this.fromServer(link, chunk))
  }

  private fromClient(link: Link, chunk: Buffer): void {
    if (this.swallows(link)) {
      link.swallowedRequest = true
      return void this.stats.swallowed++
    }
    const wasOpaque = link.reader?.opaque
    const statements = link.reader?.fromClient(chunk) ?? []
    if (link.reader?.opaque && !wasOpaque) this.stats.opaque++
    const rule = this.rule
    if (rule && statements.some((s) => rule.matches(s)) && ++rule.seen === (rule.nth ?? 1)) {
      this.rule = undefined
      this.stats.statementCuts++
      if (rule.moment === 'before-server') {
        this.cutLink(link)
        this.cutWaiters.splice(0).forEach((w) => w())
        return
      }
      link.cutOnAnswer = true
    }
    this.forward(link.server, chunk)
  }

  private fromServer(link: Link, chunk: Buffer): void {
    if (this.swallows(link)) return void this.stats.swallowed++
    if (link.cutOnAnswer) {
      // the server ran the statement and answered: the client never hears it
      this.cutLink(link)
      this.cutWaiters.splice(0).forEach((w) => w())
      return
    }
    link.reader?.fromServer(chunk)
    if (link.acks) return this.forwardUnits(link, chunk)
    if (this.mode.kind === 'delay' || link.held.length) return this.queue(link, chunk, this.mode.kind === 'delay')
    this.forward(link.client, chunk)
  }

  /** In a black hole, or a connection one held once: the chunk goes nowhere. */
  private swallows(link: Link): boolean {
    if (this.mode.kind === 'blackhole') link.holed = true
    return link.holed
  }

  /** Whole units of the broker's protocol: acks held back in delay-acks, and what follows them, to keep the order. */
  private forwardUnits(link: Link, chunk: Buffer): void {
    const mode = this.mode
    for (const unit of link.acks!.fromServer(chunk)) {
      const delayed = (mode.kind === 'delay-acks' && unit.ack) || mode.kind === 'delay'
      if (delayed && unit.ack) {
        this.stats.delayedAcks++
        if (unit.duplicate) this.stats.duplicateAcks++
      }
      this.queue(link, unit.bytes, delayed)
      if (unit.ack && this.stats.acks++ === 0) this.ackWaiters.splice(0).forEach((w) => w())
    }
  }

  /** To the client: at once, after the mode's delay (or held, gated), and never ahead of what is held before it. */
  private queue(link: Link, bytes: Buffer, delayed: boolean): void {
    const behind = link.held.length ? link.held[link.held.length - 1].at : 0
    const due = !delayed ? 0 : this.gated ? Infinity : Date.now() + (this.mode as {ms: number}).ms
    const at = Math.max(behind, due)
    if (at === 0) {
      if (!link.client.destroyed) link.client.write(bytes)
      return
    }
    if (at === Infinity && !this.gatedSince) this.gatedSince = Date.now()
    this.inFlight++
    link.held.push({at, bytes})
    this.release(link)
  }

  private release(link: Link): void {
    if (link.releasing) return
    const now = Date.now()
    while (link.held.length && link.held[0].at <= now) {
      const {bytes} = link.held.shift()!
      this.inFlight--
      if (!link.client.destroyed) link.client.write(bytes)
    }
    // an answer held until releaseAnswers() waits for it, and what is behind it too
    if (link.held.length && link.held[0].at !== Infinity) {
      link.releasing = setTimeout(() => {
        link.releasing = undefined
        this.release(link)
      }, link.held[0].at - now)
    }
  }

  private forward(to: Socket, chunk: Buffer): void {
    const mode = this.mode
    if (mode.kind !== 'delay') {
      if (!to.destroyed) to.write(chunk)
      return
    }
    // timers of one duration fire in the order they were set: the bytes keep their order
    this.inFlight++
    setTimeout(() => {
      this.inFlight--
      if (!to.destroyed) to.write(chunk)
    }, mode.ms)
  }

  private cutLink(link: Link): void {
    if (link.client.destroyed && link.server.destroyed) return
    this.stats.cuts++
    link.cut()
  }
}

/** A proxy in front of the host and port of a URL (http://, amqp://, ...), and the URL through it; no statements read. */
export async function proxyForUrl(url: string, acks?: AckProtocol): Promise<{proxy: FaultProxy; url: string}> {
  const parsed = new URL(url)
  const proxy = new FaultProxy({host: parsed.hostname, port: Number(parsed.port)}, undefined, acks)
  parsed.hostname = '127.0.0.1'
  parsed.port = String(await proxy.start())
  return {proxy, url: parsed.href.replace(/\/$/, '')}
}

/** A proxy in front of the server `url` names, and the URL that reaches it through the proxy. */
export async function proxyFor(url: string, wire: WirePart): Promise<{proxy: FaultProxy; url: string} | undefined> {
  const target = wire.target(url)
  if (!target) return undefined
  const proxy = new FaultProxy(target, wire)
  const port = await proxy.start()
  return {proxy, url: wire.viaProxy(url, port)}
}
