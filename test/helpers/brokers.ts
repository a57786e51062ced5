// The local brokers (RabbitMQ, NATS JetStream, Redis). A broker that is down is skipped
// locally with a clear message, and fails the run in CI, like the database targets.
import {connect} from 'node:net'
import {randomBytes} from 'node:crypto'

export const BROKER_URLS = {
  amqp: process.env.OUTBOX_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  nats: process.env.OUTBOX_TEST_NATS_URL ?? 'nats://127.0.0.1:4222',
  redis: process.env.OUTBOX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
}

export type BrokerName = keyof typeof BROKER_URLS

export interface Broker {
  name: BrokerName
  url: string
  host: string
  port: number
  available: boolean
}

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({host, port})
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(2000, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

export async function broker(name: BrokerName): Promise<Broker> {
  const url = BROKER_URLS[name]
  const u = new URL(url)
  const port = Number(u.port) || {amqp: 5672, nats: 4222, redis: 6379}[name]
  const available = await reachable(u.hostname, port)
  if (!available) {
    if (process.env.CI === 'true') throw new Error(`${name} broker required in CI but unreachable at ${url}`)
    console.warn(`[outbox tests] SKIPPING ${name} suites: nothing listens on ${u.hostname}:${port}. Start it or set OUTBOX_TEST_${name.toUpperCase()}_URL.`)
  }
  return {name, url, host: u.hostname, port, available}
}

/** A name unique to this file and run (exchange, stream, subject, key). */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`
}

/** The broker URL with its host:port replaced (to go through a proxy). */
export function viaPort(url: string, port: number): string {
  const u = new URL(url)
  u.hostname = '127.0.0.1'
  u.port = String(port)
  return u.toString().replace(/\/$/, '')
}
