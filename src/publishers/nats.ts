// NATS JetStream: one publish per event with Nats-Msg-Id = event id, so the stream's
// duplicate window drops a relay's resends; subject = prefix + event type. ok only on the
// stream's PubAck (a duplicate ack is ok too: the stream already has the message).
import type {ClaimedEvent} from '../schema/event-row.js'
import {brokerError, LazyConnection} from './connection.js'
import {metadata} from './envelope.js'
import {aliasOf, checkOptions, milliseconds, target, textWhere, type Checked, type OptionRules, type Target} from './options.js'
import type {MessagingTarget, Publisher, PublishResult} from './types.js'
import {loadNats} from '../core/broker-clients.js'

export type NatsPublisherOptions = NatsSettings & Target

/** Besides `target` (nats://host:4222, comma-separated for a cluster; user:password@ accepted). */
export interface NatsSettings {
  /** subject = prefix + event type (default no prefix); ends with a dot */
  subjectPrefix?: string
  /** create this stream (capturing prefix + ">") when it does not exist */
  stream?: string
  /** per publish, waiting for the PubAck (default 5s) */
  timeoutMs?: number
}

export const optionRules: OptionRules<NatsPublisherOptions> = {
  target: target(['nats', 'tls'], 'nats://127.0.0.1:4222', {list: true, bareHost: true}),
  url: aliasOf('target'),
  // the stream takes PREFIX> and each event goes to PREFIX<event_type>: without the dot the
  // two never meet ("rvl>" is no wildcard over "rvlorder.created"), and every event retried
  subjectPrefix: textWhere((v) => (v.endsWith('.') && !/[\s*>]/.test(v) ? undefined : 'must end with a dot (and hold no spaces, * or >)'), {empty: true}),
  // a name JetStream refuses fails every connect, which the relay would take for an outage
  stream: textWhere((v) => (/^[^\s.*>/\\]+$/.test(v) ? undefined : 'must be a JetStream stream name (no spaces, dots, *, >, / or \\)')),
  timeoutMs: milliseconds(),
}

interface NatsModule {
  connect(options: object): Promise<NatsConnection>
  headers(): {set(k: string, v: string): void}
  StringCodec(): {encode(text: string): Uint8Array}
}
interface NatsConnection {
  jetstream(): {publish(subject: string, data: Uint8Array, options: object): Promise<{duplicate: boolean; seq: number}>}
  jetstreamManager(): Promise<{streams: {info(name: string): Promise<unknown>; add(config: object): Promise<unknown>}}>
  close(): Promise<void>
  closed(): Promise<void | Error>
  isClosed(): boolean
}

export class NatsPublisher implements Publisher {
  readonly name = 'nats'
  readonly messaging: MessagingTarget = {system: 'nats', destination: (event) => this.subject(event)}
  private readonly connection: LazyConnection<{nc: NatsConnection; nats: NatsModule}>

  private readonly options: Checked<NatsPublisherOptions>

  constructor(options: NatsPublisherOptions) {
    this.options = checkOptions('nats', options, optionRules)
    this.connection = new LazyConnection(
      () => this.open(),
      async ({nc}) => {
        if (!nc.isClosed()) await nc.close()
      },
    )
  }

  private async open() {
    const nats = (await loadNats()) as unknown as NatsModule
    const servers = this.options.target.split(',').map((s) => s.trim())
    // The client reconnects on its own; a publish while disconnected waits for its ack timeout.
    // pinged at half the timeout: a black-holed connection is found stale and replaced soon (not after 2 min)
    const timeout = this.options.timeoutMs ?? 5000
    const nc = await nats.connect({servers, timeout, pingInterval: Math.max(100, Math.floor(timeout / 2)), maxReconnectAttempts: -1, reconnectTimeWait: 250, name: 'outbox-relay'})
    const opened = {nc, nats}
    void nc.closed().then(() => this.connection.reset(opened))
    if (this.options.stream) {
      const jsm = await nc.jetstreamManager()
      try {
        await jsm.streams.info(this.options.stream)
      } catch {
        await jsm.streams.add({name: this.options.stream, subjects: [`${this.options.subjectPrefix ?? ''}>`]})
      }
    }
    return opened
  }

  async publish(events: readonly ClaimedEvent[]): Promise<PublishResult[]> {
    let nc: NatsConnection
    let nats: NatsModule
    try {
      ;({nc, nats} = await this.connection.get())
    } catch (error) {
      const result: PublishResult = {ok: false, error: `nats connect: ${this.describe(error)}`, unreachable: true}
      return events.map(() => result)
    }
    const js = nc.jetstream()
    const codec = nats.StringCodec()
    const timeout = this.options.timeoutMs ?? 5000
    return Promise.all(
      events.map(async (event): Promise<PublishResult> => {
        const subject = this.subject(event)
        const h = nats.headers()
        for (const [k, v] of Object.entries(metadata(event))) h.set(k, v)
        try {
          await js.publish(subject, codec.encode(event.payload), {msgID: event.id, headers: h, timeout})
          return {ok: true}
        } catch (error) {
          const why = this.describe(error)
          return {ok: false, error: `nats publish ${subject}: ${why}`, unreachable: CONNECTION_LOST.test(why)}
        }
      }),
    )
  }

  private subject(event: ClaimedEvent): string {
    return `${this.options.subjectPrefix ?? ''}${event.eventType}`
  }

  async close(): Promise<void> {
    await this.connection.close()
  }

  private describe(error: unknown): string {
    const hint = (error as {code?: string})?.code === '503' ? ' (no stream captures this subject)' : ''
    return brokerError(error, this.options.target) + hint
  }
}

// no answer from the server at all (disconnected, reconnecting: publishes wait, then time out)
const CONNECTION_LOST = /^TIMEOUT|CONNECTION_CLOSED|DISCONNECT|CONNECTION_REFUSED|ECONNREFUSED/i
