// Redis Streams runtime: a consumer group on the relay's stream, XACK only after the inbox
// transaction committed. Entries left pending by a consumer that died are taken over with
// XAUTOCLAIM once idle for claimIdleMs (Redis counts each delivery). A handler error leaves the
// entry pending; after the retry delay this consumer claims it again (XCLAIM, which counts a
// delivery), and at maxAttempts it is moved to the dead-letter stream "<stream>:dead" (XADD and
// XACK in one MULTI) with the reason in the field outbox-dead-letter-reason.
import {hostname} from 'node:os'
import {BrokerUnreachableError} from '../core/errors.js'
import {redactSecrets, redactUrl} from '../core/redact.js'
import {decodeRedis} from './decode.js'
import {decodeOrReason} from './event.js'
import {Handoff} from './handoff.js'
import type {ConsumeSummary, Delivery, DeliverySource} from './loop.js'
import {inFlight, keepWaitingAlive, pause, quietly, runOn, type RuntimeOptions} from './runtime.js'
import {loadRedis} from '../core/broker-clients.js'

export interface RedisConsumeOptions {
  /** redis://[user:password@]host:6379[/db] */
  url: string
  /** the stream key (default "outbox", as the redis publisher's) */
  stream?: string
  /** the consumer group (default: the consumer's name); created at the start of the stream when missing */
  group?: string
  /** this process's name in the group (default host-pid) */
  consumerName?: string
  /** take over entries another consumer left pending this long (default 30 s; a handler running longer keeps its entry) */
  claimIdleMs?: number
  /** where dead letters go (default "<stream>:dead") */
  deadLetterStream?: string
  /** longest wait of one XREADGROUP (default 1 s) */
  blockMs?: number
  /**
   * connect timeout, and how long a connection may stay silent (it is pinged meanwhile; an
   * XREADGROUP answers within blockMs) before it is dropped and opened again (default 5 s)
   */
  timeoutMs?: number
}

interface Entry {
  id: string
  message: Record<string, string>
}
interface Multi {
  xAdd(key: string, id: string, fields: Record<string, string>): Multi
  xAck(key: string, group: string, id: string): Multi
  exec(): Promise<unknown>
}
interface RedisClient {
  connect(): Promise<unknown>
  duplicate(): RedisClient
  on(event: string, fn: (...args: any[]) => void): unknown
  xGroupCreate(key: string, group: string, id: string, options: object): Promise<unknown>
  xReadGroup(group: string, consumer: string, streams: {key: string; id: string}, options: object): Promise<{messages: (Entry | null)[]}[] | null>
  xAutoClaim(key: string, group: string, consumer: string, minIdle: number, start: string, options: object): Promise<{nextId: string; messages: (Entry | null)[]}>
  xClaim(key: string, group: string, consumer: string, minIdle: number, id: string): Promise<(Entry | null)[]>
  xClaimJustId(key: string, group: string, consumer: string, minIdle: number, id: string): Promise<string[]>
  xPendingRange(key: string, group: string, start: string, end: string, count: number, options: object): Promise<{id: string; deliveriesCounter: number}[]>
  xAck(key: string, group: string, id: string): Promise<number>
  multi(): Multi
  destroy(): void
  close(): Promise<void>
}

export const DEFAULT_CLAIM_IDLE_MS = 30_000

export async function consumeRedis<E extends object>(broker: RedisConsumeOptions, options: RuntimeOptions<E>): Promise<ConsumeSummary> {
  return runOn(() => openRedisSource(broker, options.consumer, inFlight(options)), options)
}

export async function openRedisSource(broker: RedisConsumeOptions, consumer: string, prefetch: number): Promise<DeliverySource> {
  const {createClient} = await loadRedis()
  const stream = broker.stream ?? 'outbox'
  const group = broker.group ?? consumer
  const me = broker.consumerName ?? `${hostname()}-${process.pid}`
  const dead = broker.deadLetterStream ?? `${stream}:dead`
  const claimIdleMs = broker.claimIdleMs ?? DEFAULT_CLAIM_IDLE_MS
  const timeout = broker.timeoutMs ?? 5000
  const open = async () => {
    // a black-holed connection (no answer, no reset) is not waited on for ever: silent past the
    // timeout, its socket goes, its commands fail and the client connects again
    const socket = {connectTimeout: timeout, socketTimeout: timeout + (broker.blockMs ?? 1000), reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2000)}
    const c = createClient({url: broker.url, pingInterval: Math.max(100, Math.floor(timeout / 2)), socket}) as unknown as RedisClient
    c.on('error', () => {}) // reconnects on its own; commands fail meanwhile and the pump waits
    await c.connect()
    return c
  }
  const client = await open().catch((error) => {
    throw new BrokerUnreachableError(`cannot reach Redis at ${redactUrl(broker.url)}: ${redactSecrets(String(error?.message ?? error), broker.url)}`, 'Check the URL and that Redis is running')
  })
  const reader = await open().catch(async (error) => (await client.close(), Promise.reject(error))) // XREADGROUP BLOCK holds its connection
  try {
    await client.xGroupCreate(stream, group, '0', {MKSTREAM: true})
  } catch (error) {
    if (!/BUSYGROUP/.test(String((error as Error)?.message))) throw error
  }
  const handoff = new Handoff<Delivery>()
  const stopped = new AbortController()
  const retries = new Set<NodeJS.Timeout>()
  const keepAliveMs = Math.max(100, Math.floor(claimIdleMs / 3))

  const source = {system: 'redis', destination: stream}
  const delivery = (entry: Entry, attempt: number): Delivery => {
    return {
      event: decodeOrReason(() => decodeRedis(entry.message)),
      source,
      attempt,
      ack: async () => void (await client.xAck(stream, group, entry.id)),
      retry: async (_reason, delayMs) => {
        if (stopped.signal.aborted) return // pending: taken over after claimIdleMs, or read back at a restart under the same name
        const timer = setTimeout(async () => {
          retries.delete(timer)
          if (stopped.signal.aborted) return
          // only if nobody took it meanwhile (it is idle since our failure)
          const [again] = await client.xClaim(stream, group, me, Math.max(0, delayMs - 10), entry.id).catch(() => [])
          if (again) handoff.push(delivery(again, attempt + 1))
        }, delayMs)
        retries.add(timer)
      },
      deadLetter: async (reason) => {
        const fields = {...entry.message, 'outbox-dead-letter-reason': reason, 'outbox-dead-letter-group': group, 'outbox-dead-letter-entry': entry.id}
        await client.multi().xAdd(dead, '*', fields).xAck(stream, group, entry.id).exec()
      },
      // a handler that runs long keeps its entry from being taken over (JUSTID: no delivery counted)
      keepAlive: {everyMs: keepAliveMs, touch: () => void client.xClaimJustId(stream, group, me, 0, entry.id).catch(() => {})},
    }
  }

  /** Entries read from the pending list (ours after a restart, or claimed): their delivery counts. */
  const pushCounted = async (entries: (Entry | null)[]) => {
    const live = entries.filter((e): e is Entry => e !== null)
    if (live.length === 0) return
    const pending = await client.xPendingRange(stream, group, live[0].id, live[live.length - 1].id, live.length + 100, {consumer: me})
    const counts = new Map(pending.map((p) => [p.id, p.deliveriesCounter]))
    for (const entry of live) handoff.push(delivery(entry, counts.get(entry.id) ?? 1))
  }

  const pump = async () => {
    // a restart under the same name: what this consumer had not acked comes first
    for (let cursor = '0'; !stopped.signal.aborted; ) {
      const [own] = (await reader.xReadGroup(group, me, {key: stream, id: cursor}, {COUNT: prefetch})) ?? []
      const entries = own?.messages.filter((e): e is Entry => e !== null) ?? []
      if (entries.length === 0) break
      await pushCounted(entries)
      cursor = entries[entries.length - 1].id
      await handoff.space(prefetch)
    }
    let claimCursor = '0-0'
    let nextSweep = 0
    while (!stopped.signal.aborted) {
      try {
        await handoff.space(Math.ceil(prefetch / 2)) // refill once half is taken: one read for many entries
        if (stopped.signal.aborted) break
        if (Date.now() >= nextSweep) {
          const claimed = await client.xAutoClaim(stream, group, me, claimIdleMs, claimCursor, {COUNT: prefetch})
          await pushCounted(claimed.messages)
          claimCursor = claimed.nextId
          // swept to the end: look again in a while; else go on at once
          if (claimCursor === '0-0') nextSweep = Date.now() + Math.max(100, Math.floor(claimIdleMs / 2))
          if (claimed.messages.length > 0) continue
        }
        const read = await reader.xReadGroup(group, me, {key: stream, id: '>'}, {COUNT: Math.max(1, prefetch - handoff.size), BLOCK: broker.blockMs ?? 1000})
        for (const entry of read?.[0]?.messages ?? []) if (entry) handoff.push(delivery(entry, 1))
      } catch {
        if (!stopped.signal.aborted) await pause(500, stopped.signal) // Redis away: the clients reconnect
      }
    }
  }
  const pumping = pump().catch((error) => handoff.fail(error))
  const stopKeepAlive = keepWaitingAlive(handoff, keepAliveMs)

  return {
    next: () => handoff.next(),
    ready: (max, accept) => handoff.take(max, accept),
    async stop() {
      stopped.abort()
      stopKeepAlive()
      for (const timer of retries) clearTimeout(timer)
      retries.clear()
      handoff.end() // received, not handed out: they stay pending for us, read back first at a restart
      quietly(() => reader.destroy()) // ends a blocking XREADGROUP now
      await pumping
    },
    async close() {
      stopped.abort()
      stopKeepAlive()
      quietly(() => reader.destroy())
      await client.close().catch(() => quietly(() => client.destroy()))
    },
  }
}
