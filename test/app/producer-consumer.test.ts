// Producer inside the caller's transaction (pg, mysql2, better-sqlite3, Kysely) and the
// idempotent consumer, on every dialect.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {Consumer} from '../../src/consumer.js'
import type {Db} from '../../src/db/index.js'
import {writeEvent, writeEventSync, type NewEvent} from '../../src/producer.js'
import {count} from '../helpers/events.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {sqlitePath} from '../../src/db/url.js'

const matrix = await targets()
const event = (n: number, extra: Partial<NewEvent> = {}): NewEvent => ({eventType: 'order.created', aggregateId: `order-${n}`, payload: {n}, ...extra})

/** Runs fn inside a transaction on the driver's own connection, committing or rolling back. */
async function inNativeTransaction(url: string, dialect: string, fn: (executor: object) => Promise<void> | void, commit = true) {
  if (dialect === 'postgres') {
    const pg = (await import('pg')).default
    const client = new pg.Client({connectionString: url})
    await client.connect()
    await client.query('BEGIN')
    try {
      await fn(client)
    } finally {
      await client.query(commit ? 'COMMIT' : 'ROLLBACK')
      await client.end()
    }
  } else if (dialect === 'mysql') {
    const mysql2 = (await import('mysql2/promise')).default
    const u = new URL(url)
    const conn = await mysql2.createConnection({host: u.hostname, port: Number(u.port || 3306), user: u.username, database: u.pathname.slice(1)})
    await conn.beginTransaction()
    try {
      await fn(conn)
    } finally {
      await (commit ? conn.commit() : conn.rollback())
      await conn.end()
    }
  } else {
    const Database = (await import('better-sqlite3')).default
    const database = new Database(sqlitePath(url))
    try {
      const tx = database.transaction(() => {
        fn(database)
        if (!commit) throw new Error('rollback')
      })
      try {
        tx()
      } catch (e) {
        if ((e as Error).message !== 'rollback') throw e
      }
    } finally {
      database.close()
    }
  }
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`producer and consumer on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let tables: Partial<TableNames>

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `pc${target.dialect.slice(0, 2)}`, {inbox: true, archive: false}))
      tables = names
    })
    afterAll(() => closeTables(db, names))

    it("writes the event in the caller's transaction: committed with it, rolled back with it", async () => {
      const ids: string[] = []
      const write = (executor: object, n: number) => {
        if (target.dialect === 'sqlite') ids.push(writeEventSync(executor as never, event(n, {headers: {traceparent: '00-abc-def-01'}}), {tables}))
        else return writeEvent(executor, event(n, {headers: {traceparent: '00-abc-def-01'}}), {tables}).then((id) => void ids.push(id))
      }
      await inNativeTransaction(target.url, target.dialect, (ex) => write(ex, 1), true)
      await inNativeTransaction(target.url, target.dialect, (ex) => write(ex, 2), false)
      expect(ids).toHaveLength(2)
      expect(await count(db, names, `id = '${ids[0]}'`)).toBe(1)
      expect(await count(db, names, `id = '${ids[1]}'`)).toBe(0)
      const [row] = await db.query<{event_type: string; headers: unknown; payload: unknown}>(
        sql`SELECT event_type, headers, payload FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${ids[0]}`,
      )
      const json = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v)
      expect(json(row.payload)).toEqual({n: 1})
      expect(json(row.headers)).toEqual({traceparent: '00-abc-def-01'})
    })

    it('stores your own id lower case, as PostgreSQL prints a uuid, so every dialect compares one spelling', async () => {
      const given = '0190C3C2-0000-7000-8000-0000000000AB'
      let id = ''
      await inNativeTransaction(target.url, target.dialect, async (ex) => {
        if (target.dialect === 'sqlite') id = writeEventSync(ex as never, event(4, {id: given}), {tables})
        else id = await writeEvent(ex, event(4, {id: given}), {tables})
      }, true)
      expect(id).toBe(given.toLowerCase())
      expect(await count(db, names, `id = '${given.toLowerCase()}'`)).toBe(1)
    })

    it('works inside a Kysely transaction', async () => {
      if (target.dialect === 'sqlite') return // better-sqlite3 under Kysely: same sync rules; covered by writeEventSync
      const kysely = await db.kysely()
      const id = await kysely.transaction().execute((trx) => writeEvent(trx, event(3), {tables}))
      expect(await count(db, names, `id = '${id}'`)).toBe(1)
    })

    it('refuses payloads that are not JSON values, before the database sees them', async () => {
      const circular: Record<string, unknown> = {}
      circular.self = circular
      const bad: [unknown, RegExp][] = [
        [undefined, /undefined/],
        [() => 1, /function/],
        [10n, /bigint/],
        [Number.NaN, /NaN/],
        [{a: Infinity}, /Infinity/],
        ['nul\u0000', /NUL/],
        ['\ud800', /UTF-16/],
        [Symbol('x'), /symbol/],
        [circular, /circular/],
        [{blob: 'x'.repeat(1024 * 1024)}, /bytes; the limit is/],
      ]
      const before = await count(db, names)
      await inNativeTransaction(target.url, target.dialect, async (ex) => {
        for (const [payload, message] of bad) {
          if (target.dialect === 'sqlite') expect(() => writeEventSync(ex as never, event(9, {payload}), {tables})).toThrow(message)
          else await expect(writeEvent(ex, event(9, {payload}), {tables})).rejects.toThrow(message)
        }
      }, true)
      expect(await count(db, names)).toBe(before)
    })

    it('the consumer applies each event once and skips duplicates', async () => {
      const consumer = new Consumer(db, {consumer: 'inventory', tables})
      const effects: string[] = []
      const e1 = {id: '0190c3c2-0000-7000-8000-000000000001', aggregateId: 'order-1', aggregateVersion: 1}
      expect(await consumer.handle(e1, async () => void effects.push('a'))).toBe('applied')
      expect(await consumer.handle(e1, async () => void effects.push('b'))).toBe('duplicate')
      // another consumer has its own dedupe
      expect(await new Consumer(db, {consumer: 'search', tables}).handle(e1, async () => void effects.push('c'))).toBe('applied')
      expect(effects).toEqual(['a', 'c'])
    })

    it('an effect that throws rolls back the inbox row, so the event is retried', async () => {
      const consumer = new Consumer(db, {consumer: 'mailer', tables})
      const e = {id: '0190c3c2-0000-7000-8000-000000000002', aggregateId: 'order-2'}
      await expect(consumer.handle(e, async () => Promise.reject(new Error('smtp down')))).rejects.toThrow('smtp down')
      expect(await consumer.handle(e, async () => {})).toBe('applied')
    })

    it('with checkVersion, stale aggregate versions are detected, not applied over newer', async () => {
      const consumer = new Consumer(db, {consumer: 'projector', tables, checkVersion: true})
      const v = (n: number, version: number) => ({id: `0190c3c2-0000-7000-8000-00000000010${n}`, aggregateType: 'order', aggregateId: 'order-7', aggregateVersion: version})
      const applied: number[] = []
      expect(await consumer.handle(v(1, 1), async () => void applied.push(1))).toBe('applied')
      expect(await consumer.handle(v(3, 3), async () => void applied.push(3))).toBe('applied')
      expect(await consumer.handle(v(2, 2), async () => void applied.push(2))).toBe('stale')
      expect(await consumer.handle(v(2, 2), async () => void applied.push(2))).toBe('duplicate')
      expect(applied).toEqual([1, 3])
    })

    // Two handlers at once (a consumer group): v2's effect is slow, v3 comes 100 ms later.
    // Before, both read max version 1 and both applied, v2's last; now v3 waits for v2's commit.
    it('with checkVersion, concurrent handlers of one aggregate apply in turn: an older version never lands over a newer', async () => {
      const consumer = new Consumer(db, {consumer: 'projector-2', tables, checkVersion: true})
      const v = (n: number, version: number) => ({id: `0190c3c2-0000-7000-8000-00000000020${n}`, aggregateType: 'order', aggregateId: 'order-8', aggregateVersion: version})
      const state: number[] = []
      expect(await consumer.handle(v(1, 1), async () => void state.push(1))).toBe('applied')
      const slow = consumer.handle(v(2, 2), async () => {
        await new Promise((resolve) => setTimeout(resolve, 400))
        state.push(2)
      })
      await new Promise((resolve) => setTimeout(resolve, 100))
      const fast = consumer.handle(v(3, 3), async () => void state.push(3))
      expect(await Promise.all([slow, fast])).toEqual(['applied', 'applied'])
      expect(state).toEqual([1, 2, 3])
    })
  })
}
