// consumeFrom(url, ...): the runtime for the broker the URL names; each runtime (and its
// client) is imported only for the broker chosen.
import {UsageError} from '../core/errors.js'
import type {ConsumeSummary} from './loop.js'
import type {RuntimeOptions} from './runtime.js'

export type BrokerKind = 'amqp' | 'nats' | 'redis' | 'http'

const SCHEMES: [RegExp, BrokerKind][] = [
  [/^amqps?:\/\//i, 'amqp'],
  [/^(nats|tls):\/\//i, 'nats'],
  [/^rediss?:\/\//i, 'redis'],
  [/^http:\/\//i, 'http'],
]

/** What each broker's runtime takes besides its URL, in one bag (each reads its own). */
export interface BrokerOptions {
  /** amqp: the queue (default: the consumer's name) */
  queue?: string
  /** amqp: the relay's exchange (default outbox) */
  exchange?: string
  /** amqp: the binding key (default #) */
  bindingKey?: string
  /** amqp: declare the queue, exchanges and binding (default true) */
  declare?: boolean
  /** nats: the relay's stream (required); redis: the stream key (default outbox) */
  stream?: string
  /** nats: a filter subject */
  subject?: string
  /** nats: AckWait */
  ackWaitMs?: number
  /** redis: take over entries pending this long */
  claimIdleMs?: number
  /** redis: this process's name in the group */
  consumerName?: string
}

export function brokerKind(from: string): BrokerKind {
  const found = SCHEMES.find(([pattern]) => pattern.test(from))
  if (!found) throw new UsageError(`cannot consume from ${JSON.stringify(from.replace(/\/\/[^@/]*@/, '//***@'))}`, 'Use amqp://, nats://, redis:// or http://HOST:PORT/PATH (where the relay POSTs)')
  try {
    new URL(from.split(',')[0])
  } catch {
    throw new UsageError(`${JSON.stringify(from.replace(/\/\/[^@/]*@/, '//***@'))} is not a valid URL`, 'e.g. amqp://guest:guest@127.0.0.1:5672')
  }
  return found[1]
}

/** Consumes from the broker at `from` until options.signal aborts or options.maxEvents are settled. */
export async function consumeFrom<E extends object>(from: string, broker: BrokerOptions, options: RuntimeOptions<E> & {onListening?: (url: string) => void}): Promise<ConsumeSummary> {
  switch (brokerKind(from)) {
    case 'amqp':
      return (await import('./amqp.js')).consumeAmqp({url: from, ...broker}, options)
    case 'nats':
      if (!broker.stream) throw new UsageError('consuming from NATS needs the stream', (o) => `e.g. ${o('stream')} ORDERS, the relay's --stream`)
      return (await import('./nats.js')).consumeNats({url: from, stream: broker.stream, subject: broker.subject, ackWaitMs: broker.ackWaitMs}, options)
    case 'redis':
      return (await import('./redis.js')).consumeRedis({url: from, stream: broker.stream, claimIdleMs: broker.claimIdleMs, consumerName: broker.consumerName}, options)
    case 'http':
      return (await import('./http-server.js')).serveHttp({url: from, onListening: options.onListening}, options)
  }
}
