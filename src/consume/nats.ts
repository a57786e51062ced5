// NATS JetStream runtime: a durable pull consumer on the relay's stream (explicit acks,
// AckWait, MaxDeliver = maxAttempts), ack only after the inbox transaction committed. A
// handler error is nak'd with the retry delay; the server counts deliveries, and at
// maxAttempts the message is terminated (+TERM, with the reason): JetStream publishes the
// $JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED advisory and delivers it no more. A consumer
// that dies on a message every time runs into MaxDeliver (the MAX_DELIVERIES advisory).
import {BrokerLostError, BrokerUnreachableError, UsageError} from '../core/errors.js'
import {redactSecrets} from '../core/redact.js'
import {decodeNats} from './decode.js'
import {decodeOrReason} from './event.js'
import {Handoff} from './handoff.js'
import {DEFAULT_MAX_ATTEMPTS, type ConsumeSummary, type Delivery, type DeliverySource} from './loop.js'
import {BROKER_LOST_HINT, inFlight, keepWaitingAlive, runOn, type RuntimeOptions} from './runtime.js'
import {loadNats} from '../core/broker-clients.js'

export interface NatsConsumeOptions {
  /** nats://host:4222 (comma-separated for a cluster; user:password@ accepted) */
  url: string
  /** the relay's stream (outbox relay --stream) */
  stream: string
  /** the durable consumer's name (default: the consumer's name) */
  durable?: string
  /** only the subjects matching this filter, e.g. orders.> (default: all of the stream) */
  subject?: string
  /** how long the server waits for an ack before delivering again (default 30 s; the runtime reports progress while a handler runs) */
  ackWaitMs?: number
  /** connect timeout; the connection is pinged at half of it (default 5 s) */
  timeoutMs?: number
}

type Nats = typeof import('nats')
type JsMsg = import('nats').JsMsg

export const DEFAULT_ACK_WAIT_MS = 30_000
// how long one pull waits at the server for messages: also the longest a stop waits for it
const FETCH_EXPIRES_MS = 1000

export async function consumeNats<E extends object>(broker: NatsConsumeOptions, options: RuntimeOptions<E>): Promise<ConsumeSummary> {
  const durable = broker.durable ?? options.consumer
  if (!/^[^.*>\s]+$/.test(durable)) throw new UsageError(`durable consumer name ${JSON.stringify(durable)} may not contain '.', '*', '>' or spaces`, 'Pick another consumer name (or durable)')
  if (!broker.stream) throw new UsageError('the NATS runtime needs the stream', 'e.g. {stream: "ORDERS"} (--stream), the relay\'s --stream')
  return runOn(() => openNatsSource({...broker, durable}, inFlight(options), options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS), options)
}

export async function openNatsSource(broker: NatsConsumeOptions & {durable: string}, prefetch: number, maxAttempts: number): Promise<DeliverySource> {
  const nats: Nats = await loadNats()
  const describe = (error: unknown) => redactSecrets(String((error as Error)?.message ?? error), broker.url)
  const servers = broker.url.split(',').map((s) => s.trim().replace(/^nats:\/\//i, ''))
  // pinged at half the timeout (not every 2 min): a black-holed connection is found stale and replaced within about 1.5 timeouts
  const timeout = broker.timeoutMs ?? 5000
  const nc = await nats.connect({servers, timeout, pingInterval: Math.max(100, Math.floor(timeout / 2)), maxReconnectAttempts: -1, reconnectTimeWait: 250, name: `outbox-consume-${broker.durable}`}).catch((error) => {
    throw new BrokerUnreachableError(`cannot reach NATS at ${servers.join(',').replace(/\/\/[^@/]*@/, '//***@')}: ${describe(error)}`, 'Check the URL and that the server runs with JetStream')
  })
  const ackWaitMs = broker.ackWaitMs ?? DEFAULT_ACK_WAIT_MS
  // an older server ignores a +TERM that carries a reason (the message stays unacked): send it bare there
  const termWithReason = atLeast(nc.info?.version ?? '0', [2, 11, 0])
  const handoff = new Handoff<Delivery>()
  let stopping = false
  void nc.closed().then((error) => stopping || handoff.fail(new BrokerLostError(`lost the NATS connection: ${error ? describe(error) : 'closed'}`, BROKER_LOST_HINT)))
  try {
    await ensureConsumer(nats, await nc.jetstreamManager(), broker, ackWaitMs, maxAttempts)
    const consumer = await nc.jetstream().consumers.get(broker.stream, broker.durable)
    const keepAliveMs = Math.max(100, Math.floor(ackWaitMs / 3))
    const delivery = (m: JsMsg): Delivery => {
      return {
        event: decodeOrReason(() => decodeNats(m)),
        source: {system: 'nats', destination: m.subject},
        attempt: m.info.deliveryCount,
        ack: async () => m.ack(),
        retry: async (_reason, delayMs) => m.nak(delayMs),
        deadLetter: async (reason) => (termWithReason ? m.term(reason.slice(0, 200)) : m.term()),
        keepAlive: {everyMs: keepAliveMs, touch: () => m.working()},
      }
    }
    // Short pulls (fetch, expiring after a second) rather than consume(): a pull request left
    // open at the server when we stop would take messages for a connection that is gone, and
    // they would come back only after AckWait.
    const pump = (async () => {
      try {
        while (!stopping) {
          // refill once half is taken: one pull for many messages, not one per message taken
          await handoff.space(Math.ceil(prefetch / 2))
          if (stopping) break
          const batch = await consumer.fetch({max_messages: Math.max(1, prefetch - handoff.size), expires: FETCH_EXPIRES_MS})
          for await (const m of batch) if (!handoff.push(delivery(m))) m.nak()
        }
      } catch (error) {
        if (!stopping) handoff.fail(error)
      }
    })()
    const stopKeepAlive = keepWaitingAlive(handoff, keepAliveMs)
    return {
      next: () => handoff.next(),
      ready: (max, accept) => handoff.take(max, accept),
      async stop() {
        stopping = true
        stopKeepAlive()
        // received, not handed out: back at once; the pull in flight ends within FETCH_EXPIRES_MS and the pump naks what it brings
        for (const d of handoff.end()) await d.retry('stopping', 0)
        await pump
      },
      async close() {
        stopping = true
        stopKeepAlive()
        await nc.flush().catch(() => {}) // the acks of the last handlers
        await nc.close().catch(() => {})
      },
    }
  } catch (error) {
    stopping = true
    await nc.close().catch(() => {})
    throw error
  }
}

async function ensureConsumer(nats: Nats, jsm: import('nats').JetStreamManager, broker: NatsConsumeOptions & {durable: string}, ackWaitMs: number, maxAttempts: number): Promise<void> {
  const apiCode = (error: unknown) => (error as {api_error?: {err_code?: number}})?.api_error?.err_code
  try {
    await jsm.streams.info(broker.stream)
  } catch (error) {
    if (apiCode(error) === 10059) throw new UsageError(`JetStream stream ${broker.stream} does not exist`, `Start the relay with --stream ${broker.stream} (it creates it), or create it`)
    throw error
  }
  const settings = {ack_wait: nats.nanos(ackWaitMs), max_deliver: maxAttempts}
  try {
    const info = await jsm.consumers.info(broker.stream, broker.durable)
    const filter = info.config.filter_subject || undefined
    if ((broker.subject ?? undefined) !== filter) {
      throw new UsageError(`durable consumer ${broker.durable} on ${broker.stream} filters ${JSON.stringify(filter ?? '(all)')}, not ${JSON.stringify(broker.subject ?? '(all)')}`, 'Use its filter, or another consumer name (durable)')
    }
    if (info.config.ack_wait !== settings.ack_wait || info.config.max_deliver !== settings.max_deliver) await jsm.consumers.update(broker.stream, broker.durable, settings)
  } catch (error) {
    if (apiCode(error) !== 10014) throw error
    await jsm.consumers.add(broker.stream, {
      durable_name: broker.durable,
      ack_policy: nats.AckPolicy.Explicit,
      deliver_policy: nats.DeliverPolicy.All,
      filter_subject: broker.subject,
      ...settings,
    })
  }
}

function atLeast(version: string, wanted: number[]): boolean {
  const parts = version.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0)
  for (let i = 0; i < wanted.length; i++) if ((parts[i] ?? 0) !== wanted[i]) return (parts[i] ?? 0) > wanted[i]
  return true
}
