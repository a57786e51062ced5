// RabbitMQ runtime: a durable quorum queue bound to the relay's topic exchange, manual acks
// with prefetch = 2 x concurrency x batch, ack only after the inbox transaction committed. A handler error
// is nacked back to the queue after the retry delay; the quorum queue counts deliveries
// (x-delivery-count), and at maxAttempts the message is rejected into the queue's dead-letter
// exchange, which routes it to the queue "<queue>.dead-letter".
import {BrokerLostError, BrokerUnreachableError, UsageError} from '../core/errors.js'
import {redactSecrets, redactUrl} from '../core/redact.js'
import {decodeAmqp} from './decode.js'
import {decodeOrReason} from './event.js'
import {Handoff} from './handoff.js'
import type {ConsumeSummary, Delivery, DeliverySource} from './loop.js'
import {BROKER_LOST_HINT, inFlight, quietly, runOn, type RuntimeOptions} from './runtime.js'
import {loadAmqplib} from '../core/broker-clients.js'

export interface AmqpConsumeOptions {
  /** amqp://user:password@host:5672/vhost */
  url: string
  /** the queue (default: the consumer's name) */
  queue?: string
  /** the relay's topic exchange the queue is bound to (default "outbox", as the amqp publisher's) */
  exchange?: string
  /** the binding key (default "#": every event type; the routing key is the event type) */
  bindingKey?: string
  /** where dead letters go (default "<queue>.dead-letter": a fanout exchange and a queue of that name) */
  deadLetter?: string
  /**
   * declare the exchange, the quorum queue with its dead-letter exchange, the dead-letter queue
   * and the binding (default true). false: consume an existing queue as it is.
   */
  declare?: boolean
  /** connect timeout, and heartbeats at half of it: a silent connection is lost after about that long (default 10 s) */
  timeoutMs?: number
}

type Message = import('amqplib').ConsumeMessage

// A spare per delivery in flight: a quorum queue sends the next message only after an ack, and
// that wait then overlaps the inbox transaction, where the next batch gathers (BENCHMARKS.md,
// consumer throughput). Spares not handed out go back to the queue at a stop.
const PREFETCH_PER_HANDLER = 2

/** Consumes until options.signal aborts or options.maxEvents messages are settled. */
export async function consumeAmqp<E extends object>(broker: AmqpConsumeOptions, options: RuntimeOptions<E>): Promise<ConsumeSummary> {
  return runOn(() => openAmqpSource(broker, options.consumer, PREFETCH_PER_HANDLER * inFlight(options)), options)
}

export function amqpNames(broker: AmqpConsumeOptions, consumer: string) {
  const queue = broker.queue ?? consumer
  return {queue, exchange: broker.exchange ?? 'outbox', bindingKey: broker.bindingKey ?? '#', deadLetter: broker.deadLetter ?? `${queue}.dead-letter`}
}

export async function openAmqpSource(broker: AmqpConsumeOptions, consumer: string, prefetch: number): Promise<DeliverySource> {
  const amqp = await loadAmqplib()
  const n = amqpNames(broker, consumer)
  const describe = (error: unknown) => redactSecrets(String((error as Error)?.message ?? error), broker.url)
  const connection = await amqp.connect(withHeartbeat(broker.url, broker.timeoutMs ?? 10_000), {timeout: broker.timeoutMs ?? 10_000}).catch((error) => {
    throw new BrokerUnreachableError(`cannot reach RabbitMQ at ${redactUrl(broker.url)}: ${describe(error)}`, 'Check the URL and that the broker is running')
  })
  const handoff = new Handoff<Delivery>()
  let stopping = false
  const lost = (error?: unknown) => {
    if (!stopping) handoff.fail(new BrokerLostError(`lost the RabbitMQ connection: ${error ? describe(error) : 'closed'}`, BROKER_LOST_HINT))
  }
  connection.on('error', lost)
  connection.on('close', lost)
  try {
    const channel = await connection.createChannel()
    channel.on('error', lost)
    if (broker.declare !== false) await declare(channel, n)
    await channel.prefetch(prefetch)
    const retries = new Map<NodeJS.Timeout, () => void>()
    const seen = new Map<string, number>() // deliveries per message id, for queues that keep no count
    const settled = (message: Message) => message.properties.messageId && seen.delete(message.properties.messageId)
    const source = {system: 'rabbitmq', destination: n.queue}
    const delivery = (message: Message): Delivery => {
      return {
        event: decodeOrReason(() => decodeAmqp(message)),
        source,
        attempt: attemptOf(message, seen),
        ack: async () => {
          channel.ack(message)
          settled(message)
        },
        retry: async (_reason, delayMs) => {
          // on a channel that closed meanwhile the broker has requeued the message already
          const nack = () => quietly(() => channel.nack(message, false, true))
          if (stopping || delayMs === 0) return nack()
          const timer = setTimeout(() => (retries.delete(timer), nack()), delayMs)
          retries.set(timer, nack)
        },
        deadLetter: async () => {
          channel.nack(message, false, false)
          settled(message)
        },
      }
    }
    const {consumerTag} = await channel.consume(
      n.queue,
      (message) => {
        if (!message) return lost(new Error(`the broker cancelled the consumer of queue ${n.queue} (deleted?)`))
        if (!handoff.push(delivery(message))) channel.nack(message, false, true)
      },
      {noAck: false},
    )
    return {
      next: () => handoff.next(),
      ready: (max, accept) => handoff.take(max, accept),
      async stop() {
        stopping = true
        await channel.cancel(consumerTag).catch(() => {})
        // received, not handed out: back to the queue at once (as are retries still waiting)
        for (const d of handoff.end()) await d.retry('stopping', 0)
        for (const [timer, nack] of retries) clearTimeout(timer), nack()
        retries.clear()
      },
      async close() {
        stopping = true
        await channel.close().catch(() => {})
        await connection.close().catch(() => {})
      },
    }
  } catch (error) {
    stopping = true
    await connection.close().catch(() => {})
    throw declareError(error, n)
  }
}

async function declare(channel: import('amqplib').Channel, n: ReturnType<typeof amqpNames>): Promise<void> {
  // the same declaration as the amqp publisher's (another one is PRECONDITION_FAILED)
  await channel.assertExchange(n.exchange, 'topic', {durable: true})
  await channel.assertExchange(n.deadLetter, 'fanout', {durable: true})
  await channel.assertQueue(n.deadLetter, {durable: true, arguments: {'x-queue-type': 'quorum'}})
  await channel.bindQueue(n.deadLetter, n.deadLetter, '')
  // quorum: replicated, and it counts deliveries (x-delivery-count), which the retry bound reads
  await channel.assertQueue(n.queue, {durable: true, arguments: {'x-queue-type': 'quorum', 'x-dead-letter-exchange': n.deadLetter}})
  await channel.bindQueue(n.queue, n.exchange, n.bindingKey)
}

function declareError(error: unknown, n: ReturnType<typeof amqpNames>): unknown {
  const text = String((error as Error)?.message ?? error)
  if (/PRECONDITION_FAILED|inequivalent arg/i.test(text)) {
    return new UsageError(`RabbitMQ refused the declaration of queue ${n.queue} or exchange ${n.exchange}: ${text.replace(/^Operation failed: \w+; /, '')}`, 'Consume it as it is (declare: false, --no-declare) or pick another queue name')
  }
  if (/NOT_FOUND/i.test(text)) return new UsageError(`RabbitMQ: ${text.replace(/^Operation failed: \w+; /, '')}`, 'Declare it, or let the consumer declare it (declare: true)')
  return error
}

/** 1 on the first delivery: the quorum queue's count when it keeps one, else our own. */
function attemptOf(message: Message, seen: Map<string, number>): number {
  const count = message.properties.headers?.['x-delivery-count']
  if (typeof count === 'number') return count + 1
  const id = message.properties.messageId
  if (!message.fields.redelivered) {
    if (id) seen.set(id, 1)
    return 1
  }
  const attempt = (id ? (seen.get(id) ?? 1) : 1) + 1
  if (id) seen.set(id, attempt)
  return attempt
}

/**
 * Heartbeats at half the timeout unless the URL asks for its own: a black-holed connection (no
 * answer, no reset) is found lost within about the timeout, not RabbitMQ's 60 s heartbeat twice.
 */
function withHeartbeat(url: string, timeoutMs: number): string {
  if (/[?&]heartbeat=/.test(url)) return url
  return `${url}${url.includes('?') ? '&' : '?'}heartbeat=${Math.max(1, Math.round(timeoutMs / 2000))}`
}
