// What a chaos run may leave behind, read from the outside: its worker processes (found by a
// text in their environment: the workers get their config, URL included, there), its scratch
// tables in a database of the test's own, and its scratch objects on a real broker (by the
// run's prefix, chaos_<hex>: src/chaos/workers/transport-brokers.ts names them after it).
import {readdirSync, readFileSync} from 'node:fs'
import {raw, sql} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import type {Target} from './targets.js'

/** pids of processes whose environment mentions `text`. */
export function processesWith(text: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').includes(text)) pids.push(Number(entry))
    } catch {}
  }
  return pids
}

/** A database no one else uses (server dialects), or a fresh SQLite file: every chaos_ table in it is the test's. */
export async function ownDatabase(target: Target): Promise<{url: string; marker: string; drop: () => Promise<void>}> {
  if (target.dialect === 'sqlite') return {url: target.url, marker: target.url.slice('sqlite:'.length), drop: async () => {}}
  const name = `chaos_exit_${Math.random().toString(16).slice(2, 10)}`
  const admin = await openDb(target.url, {poolSize: 1})
  const quoted = raw(admin.dialect.render.quoteIdent(name))
  await admin.execute(sql`CREATE DATABASE ${quoted}`)
  await admin.close()
  const url = new URL(target.url)
  url.pathname = `/${name}`
  return {
    url: url.href,
    marker: name,
    async drop() {
      const again = await openDb(target.url, {poolSize: 1})
      await again.execute(target.dialect === 'postgres' ? sql`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)` : sql`DROP DATABASE IF EXISTS ${quoted}`)
      await again.close()
    },
  }
}

/** Names of the chaos_ tables in the database `db` is connected to. */
export async function chaosTables(db: Db): Promise<string[]> {
  const like = 'chaos\\_%'
  const query =
    db.dialect.name === 'sqlite'
      ? sql`SELECT name AS t FROM sqlite_master WHERE type = 'table' AND name LIKE ${like} ESCAPE '\\'`
      : db.dialect.name === 'postgres'
        ? sql`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE ${like}`
        : sql`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ${like}`
  return (await db.query<{t: string}>(query)).map((r) => r.t).sort()
}

/** A run's prefix from one of its table names (chaos_<6 hex>_...). */
export const prefixOf = (table: string) => /^chaos_[0-9a-f]{6}/.exec(table)?.[0]

/** The scratch objects of runs with these prefixes still on the broker. */
export async function brokerLeftovers(kind: 'amqp' | 'nats' | 'redis', url: string, prefixes: Iterable<string>): Promise<string[]> {
  const left: string[] = []
  const list = [...prefixes]
  if (kind === 'amqp') {
    const amqp = await import('amqplib')
    const connection = await amqp.connect(url)
    try {
      for (const p of list) {
        for (const [type, name] of [['queue', `${p}_q`], ['queue', `${p}_q.dead-letter`], ['exchange', `${p}_x`], ['exchange', `${p}_q.dead-letter`]]) {
          // a passive check closes its channel when the object is missing: one channel each
          const channel = await connection.createChannel()
          channel.on('error', () => {})
          const there = await (type === 'queue' ? channel.checkQueue(name) : channel.checkExchange(name)).then(() => true, () => false)
          if (there) {
            left.push(`${type} ${name}`)
            await channel.close()
          }
        }
      }
    } finally {
      await connection.close()
    }
  } else if (kind === 'nats') {
    const nats = await import('nats')
    const nc = await nats.connect({servers: url.replace(/^nats:\/\//, '')})
    try {
      const jsm = await nc.jetstreamManager()
      for await (const name of jsm.streams.names()) if (list.some((p) => name.startsWith(p))) left.push(`stream ${name}`)
    } finally {
      await nc.close()
    }
  } else {
    const {createClient} = await import('redis')
    const client = createClient({url})
    await client.connect()
    try {
      for (const p of list) left.push(...(await client.keys(`${p}*`)).map((k) => `key ${k}`))
    } finally {
      await client.close()
    }
  }
  return left.sort()
}
