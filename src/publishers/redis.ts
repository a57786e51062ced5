// Redis Streams: XADD one entry per event (fields id, type, aggregate, created_at, headers,
// payload), pipelined per batch. ok only when Redis answered the XADD with an entry id.
// No offline queue and no reconnecting in the background: while Redis is down a publish fails
// at once (retryable) instead of waiting, and a lost connection is forgotten (the next publish
// opens one). A connection whose XADD went unanswered is dropped: its replies would come late
// and out of step, so it is never trusted again.
import type {ClaimedEvent} from '../schema/event-row.js'
import {brokerError, LazyConnection, within} from './connection.js'
import {metadata} from './envelope.js'
import {aliasOf, checkOptions, integer, milliseconds, target, text, type Checked, type OptionRules, type Target} from './options.js'
import type {MessagingTarget, Publisher, PublishResult} from './types.js'
import {loadRedis} from '../core/broker-clients.js'

export type RedisPublisherOptions = RedisSettings & Target

/** Besides `target` (redis://[user:password@]host:6379[/db]). */
export interface RedisSettings {
  /** stream key (default "outbox") */
  stream?: string
  /** approximate MAXLEN trim on each XADD (default: no trim) */
  maxLen?: number
  /** per batch (default 5s) */
  timeoutMs?: number
}

export const optionRules: OptionRules<RedisPublisherOptions> = {
  target: target(['redis', 'rediss'], 'redis://127.0.0.1:6379'),
  url: aliasOf('target'),
  stream: text(),
  maxLen: integer(1),
  timeoutMs: milliseconds(),
}

interface RedisClient {
  connect(): Promise<unknown>
  on(event: string, fn: (...args: any[]) => void): unknown
  xAdd(key: string, id: string, fields: Record<string, string>, options?: object): Promise<string>
  isReady: boolean
  destroy(): void
  close(): Promise<void>
}

export class RedisPublisher implements Publisher {
  readonly name = 'redis'
  readonly messaging: MessagingTarget = {system: 'redis', destination: () => this.stream}
  private readonly stream: string
  private readonly connection: LazyConnection<RedisClient>

  private readonly options: Checked<RedisPublisherOptions>

  constructor(options: RedisPublisherOptions) {
    this.options = checkOptions('redis', options, optionRules)
    this.stream = this.options.stream ?? 'outbox'
    this.connection = new LazyConnection(
      () => this.open(),
      // QUIT waits for the answers a black-holed connection never gets: not longer than a publish
      async (client) => {
        if ((await within(client.close(), this.options.timeoutMs ?? 5000)) === 'late') destroy(client)
      },
    )
  }

  private async open(): Promise<RedisClient> {
    const {createClient} = await loadRedis()
    const timeout = this.options.timeoutMs ?? 5000
    // a refused or reset connection fails the connect at once rather than retrying until the timeout
    const client = createClient({url: this.options.target, disableOfflineQueue: true, socket: {connectTimeout: timeout, reconnectStrategy: false}}) as unknown as RedisClient
    let cause: unknown
    client.on('error', (error) => {
      cause ??= error
      this.connection.reset(client)
    })
    try {
      await withTimeout(client.connect(), timeout, 'connect')
    } catch (error) {
      destroy(client)
      // the socket's error (ECONNREFUSED, ECONNRESET), not the client's "closed" that follows it
      throw error instanceof PublishTimeout ? error : (cause ?? error)
    }
    return client
  }

  async publish(events: readonly ClaimedEvent[]): Promise<PublishResult[]> {
    let client: RedisClient
    try {
      client = await this.connection.get()
    } catch (error) {
      const result: PublishResult = {ok: false, error: `redis connect: ${this.describe(error)}`, unreachable: true}
      return events.map(() => result)
    }
    const timeout = this.options.timeoutMs ?? 5000
    const trim = this.options.maxLen ? {TRIM: {strategy: 'MAXLEN', strategyModifier: '~', threshold: this.options.maxLen}} : undefined
    // Issued in one tick, so node-redis pipelines them on the socket.
    return Promise.all(
      events.map(async (event): Promise<PublishResult> => {
        const fields: Record<string, string> = {...metadata(event), id: event.id, type: event.eventType, payload: event.payload}
        if (event.headers) fields.headers = event.headers
        try {
          await withTimeout(client.xAdd(this.stream, '*', fields, trim), timeout, 'XADD')
          return {ok: true}
        } catch (error) {
          if (error instanceof PublishTimeout) this.connection.reset(client)
          const why = this.describe(error)
          return {ok: false, error: `redis XADD ${this.stream}: ${why}`, unreachable: CONNECTION_LOST.test(why)}
        }
      }),
    )
  }

  async close(): Promise<void> {
    await this.connection.close()
  }

  private describe(error: unknown): string {
    return brokerError(error, this.options.target)
  }
}

class PublishTimeout extends Error {}

/** destroy() throws on a client that is closed already */
function destroy(client: RedisClient): void {
  try {
    client.destroy()
  } catch {}
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new PublishTimeout(`${what} timed out after ${ms}ms`)), ms)))
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

// the connection went away under a command: the server, not the event
const CONNECTION_LOST = /socket closed|client is (offline|closed)|connection (is )?closed|ECONNRESET|ECONNREFUSED/i
