// RabbitMQ (AMQP 0-9-1) through amqplib: a confirm channel, persistent messages,
// message_id = event id, routing key = event type, on a configurable topic exchange.
// ok only after the broker's publisher confirm; with `mandatory` (default) a message no queue
// is bound for comes back as unroutable and is retried rather than silently dropped.
import type {ClaimedEvent} from '../schema/event-row.js'
import {brokerError, LazyConnection, within} from './connection.js'
import {metadata} from './envelope.js'
import {aliasOf, callback, checkOptions, milliseconds, oneOf, target, text, yesNo, type Checked, type OptionRules, type Target} from './options.js'
import type {MessagingTarget, Publisher, PublishResult} from './types.js'
import {loadAmqplib} from '../core/broker-clients.js'

export type AmqpPublisherOptions = AmqpSettings & Target

/** Besides `target` (amqp://user:password@host:5672/vhost); README, "Publisher options". */
export interface AmqpSettings {
  /** default "outbox" */
  exchange?: string
  /** default "topic" */
  exchangeType?: 'topic' | 'direct' | 'fanout' | 'headers'
  /** declare the exchange (durable) if it does not exist (default true) */
  assertExchange?: boolean
  /** routing key for an event (default: its event type) */
  routingKey?: (event: ClaimedEvent) => string
  /** treat "no queue bound" as a failure (default true) */
  mandatory?: boolean
  /** connect and confirm timeout (default 10s) */
  timeoutMs?: number
}

export const optionRules: OptionRules<AmqpPublisherOptions> = {
  target: target(['amqp', 'amqps'], 'amqp://user:password@127.0.0.1:5672'),
  url: aliasOf('target'),
  exchange: text(),
  exchangeType: oneOf('topic', 'direct', 'fanout', 'headers'),
  assertExchange: yesNo(),
  routingKey: callback(),
  mandatory: yesNo(),
  timeoutMs: milliseconds(),
}

// Structural types for the part of amqplib we use: the client is imported lazily.
interface ConfirmChannel {
  publish(exchange: string, key: string, content: Buffer, options: object, cb: (err: unknown) => void): boolean
  assertExchange(name: string, type: string, options: object): Promise<unknown>
  on(event: string, fn: (...args: any[]) => void): void
  once(event: string, fn: (...args: any[]) => void): void
  close(): Promise<void>
}
interface Open {
  connection: Connection
  channel: ConfirmChannel
}
interface Connection {
  /** amqplib's connection under its promise API, and its socket */
  connection?: {stream?: {destroy(): void}}
  createConfirmChannel(): Promise<ConfirmChannel>
  on(event: string, fn: (...args: any[]) => void): void
  close(): Promise<void>
}

export class AmqpPublisher implements Publisher {
  readonly name = 'amqp'
  readonly messaging: MessagingTarget = {system: 'rabbitmq', destination: () => this.exchange}
  private readonly exchange: string
  private readonly connection: LazyConnection<Open>
  private readonly returned = new Set<string>()
  private readonly options: Checked<AmqpPublisherOptions>

  constructor(options: AmqpPublisherOptions) {
    this.options = checkOptions('amqp', options, optionRules)
    this.exchange = this.options.exchange ?? 'outbox'
    this.connection = new LazyConnection(
      () => this.open(),
      // a graceful close waits for the broker's Close-Ok, which a black-holed connection never
      // sends: not longer than a publish, then the socket goes
      async (open) => {
        const closing = (async () => {
          await open.channel.close().catch(() => {})
          await open.connection.close().catch(() => {})
        })()
        if ((await within(closing, this.options.timeoutMs ?? 10_000)) === 'late') open.connection.connection?.stream?.destroy()
      },
    )
  }

  private async open(): Promise<Open> {
    const amqp = await loadAmqplib()
    const timeout = this.options.timeoutMs ?? 10_000
    const connection = (await amqp.connect(this.options.target, {timeout})) as unknown as Connection
    let opened: Open | undefined
    // Lost connection: the next publish reconnects. Unconfirmed messages fail ("channel closed").
    const reset = () => opened && this.connection.reset(opened)
    connection.on('error', reset)
    connection.on('close', reset)
    try {
      const channel = await connection.createConfirmChannel()
      channel.on('error', reset)
      channel.on('close', reset)
      channel.on('return', (message: {properties: {messageId?: string}}) => {
        if (message.properties.messageId) this.returned.add(message.properties.messageId)
      })
      if (this.options.assertExchange !== false) await channel.assertExchange(this.exchange, this.options.exchangeType ?? 'topic', {durable: true})
      opened = {connection, channel}
      return opened
    } catch (error) {
      await connection.close().catch(() => {})
      throw error
    }
  }

  async publish(events: readonly ClaimedEvent[]): Promise<PublishResult[]> {
    let opened: Open
    try {
      opened = await this.connection.get()
    } catch (error) {
      const result: PublishResult = {ok: false, error: `amqp connect: ${this.describe(error)}`, unreachable: true}
      return events.map(() => result)
    }
    const timeoutMs = this.options.timeoutMs ?? 10_000
    const mandatory = this.options.mandatory !== false
    const sends = events.map(
      (event) =>
        new Promise<PublishResult>((resolve) => {
          const key = this.options.routingKey?.(event) ?? event.eventType
          const timer = setTimeout(() => resolve({ok: false, error: `amqp: no confirm within ${timeoutMs}ms`}), timeoutMs)
          const done = (result: PublishResult) => {
            clearTimeout(timer)
            resolve(result)
          }
          try {
            opened.channel.publish(
              this.exchange,
              key,
              Buffer.from(event.payload, 'utf8'),
              {
                persistent: true,
                mandatory,
                messageId: event.id,
                type: event.eventType,
                contentType: 'application/json',
                timestamp: Math.floor(event.createdAt.getTime() / 1000),
                headers: metadata(event),
              },
              (err) => {
                // basic.return arrives before the ack of the same message
                if (err) done({ok: false, error: `amqp: ${this.describe(err)}`})
                else if (this.returned.delete(event.id)) done({ok: false, error: `amqp: unroutable: no queue bound to exchange ${this.exchange} for routing key ${key}`})
                else done({ok: true})
              },
            )
          } catch (error) {
            done({ok: false, error: `amqp: ${this.describe(error)}`, unreachable: CONNECTION_LOST.test(this.describe(error))})
          }
        }),
    )
    const results = await Promise.all(sends)
    if (results.some((r) => !r.ok && r.error.includes('no confirm'))) {
      // A broker that stops confirming is treated as gone: start over on a new connection.
      this.connection.reset(opened)
    }
    return results
  }

  async close(): Promise<void> {
    await this.connection.close()
  }

  private describe(error: unknown): string {
    return brokerError(error, this.options.target)
  }
}

// the connection or channel went away under a publish: the broker, not the event
const CONNECTION_LOST = /channel (closed|ended)|connection (closed|lost)|ECONNRESET|ECONNREFUSED/i
