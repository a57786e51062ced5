// Consumer on the app's own executor, on every dialect: each pool, connection, Kysely instance
// and the library's Db. The effect gets the app's own transaction object and writes through it;
// the effect and the inbox row commit together or not at all, a duplicate is skipped (also two
// deliveries at once), and with checkVersion two handlers of one aggregate take turns. handleBatch
// runs several events in one transaction: an effect that throws undoes its own event alone (the
// batch runs again, a savepoint each), a duplicate is skipped (also inside the batch), a COMMIT
// that fails keeps none. What it sends: consumer-batch-statements.test.ts.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {Kysely, MysqlDialect, PostgresDialect, SqliteDialect, sql as ksql} from 'kysely'
import {raw, sql, type DialectName, type TableNames} from '../../dialects/index.js'
import {Consumer} from '../../src/consumer.js'
import {uuidv7} from '../../src/core/uuid.js'
import {driverTransactions} from '../../src/db/executor.js'
import {openDb, type Db, type Queryable} from '../../src/db/index.js'
import {sqlitePath} from '../../src/db/url.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()

/** An executor of one kind, and how an app's effect writes a row through its transaction object. */
interface Kind {
  name: string
  open(url: string): Promise<{executor: object; close(): Promise<void>}>
  /** INSERT INTO effects (event_id, note) through the effect's tx, as app code would */
  write(tx: any, effects: string, eventId: string, note: string): Promise<unknown>
}

const pgWrite: Kind['write'] = (tx, effects, id, note) => tx.query(`INSERT INTO ${effects} (event_id, note) VALUES ($1, $2)`, [id, note])
const mysqlWrite: Kind['write'] = (tx, effects, id, note) => tx.query(`INSERT INTO ${effects} (event_id, note) VALUES (?, ?)`, [id, note])
const kyselyWrite: Kind['write'] = (trx, effects, id, note) => ksql`INSERT INTO ${ksql.table(effects)} (event_id, note) VALUES (${id}, ${note})`.execute(trx)
const dbWrite: Kind['write'] = (tx: Queryable, effects, id, note) => tx.execute(sql`INSERT INTO ${raw(effects)} (event_id, note) VALUES (${id}, ${note})`)

const closing = (close: () => unknown) => async () => void (await close())

const KINDS: Record<DialectName, Kind[]> = {
  postgres: [
    {name: 'a pg Pool', write: pgWrite, open: async (url) => {
      const pool = new (await import('pg')).default.Pool({connectionString: url, max: 4})
      return {executor: pool, close: closing(() => pool.end())}
    }},
    {name: 'a pg Client', write: pgWrite, open: async (url) => {
      const client = new (await import('pg')).default.Client({connectionString: url})
      await client.connect()
      return {executor: client, close: closing(() => client.end())}
    }},
    {name: 'a Kysely instance', write: kyselyWrite, open: async (url) => {
      const kysely = new Kysely<any>({dialect: new PostgresDialect({pool: new (await import('pg')).default.Pool({connectionString: url, max: 4})})})
      return {executor: kysely, close: closing(() => kysely.destroy())}
    }},
  ],
  mysql: [
    {name: 'a mysql2/promise pool', write: mysqlWrite, open: async (url) => {
      const pool = (await import('mysql2/promise')).default.createPool(url)
      return {executor: pool, close: closing(() => pool.end())}
    }},
    {name: 'a mysql2/promise connection', write: mysqlWrite, open: async (url) => {
      const connection = await (await import('mysql2/promise')).default.createConnection(url)
      return {executor: connection, close: closing(() => connection.end())}
    }},
    {name: 'a Kysely instance', write: kyselyWrite, open: async (url) => {
      const kysely = new Kysely<any>({dialect: new MysqlDialect({pool: (await import('mysql2')).default.createPool(url)})})
      return {executor: kysely, close: closing(() => kysely.destroy())}
    }},
  ],
  sqlite: [
    {name: 'a better-sqlite3 Database', write: (tx, effects, id, note) => Promise.resolve(tx.prepare(`INSERT INTO ${effects} (event_id, note) VALUES (?, ?)`).run(id, note)), open: async (url) => {
      const database = new (await import('better-sqlite3')).default(sqlitePath(url), {timeout: 5000})
      return {executor: database, close: closing(() => database.close())}
    }},
    {name: 'a Kysely instance', write: kyselyWrite, open: async (url) => {
      const kysely = new Kysely<any>({dialect: new SqliteDialect({database: new (await import('better-sqlite3')).default(sqlitePath(url), {timeout: 5000})})})
      return {executor: kysely, close: closing(() => kysely.destroy())}
    }},
  ],
}

/** The library's Db on every dialect: its Queryable, or (outbox consume) the driver's own object. */
const dbKinds = (dialect: DialectName): Kind[] => [
  {name: 'a Db from openDb', write: dbWrite, open: async (url) => {
    const db = await openDb(url)
    return {executor: db, close: () => db.close()}
  }},
  {name: "a Db whose effects get the driver's object (outbox consume)", write: KINDS[dialect][0].write, open: async (url) => {
    const db = await openDb(url)
    return {executor: driverTransactions(db), close: () => db.close()}
  }},
]

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const target of matrix) {
  describe.skipIf(!target.available)(`Consumer on the app's executor, ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let effects: string
    // a table whose constraint is checked at COMMIT only: an effect that breaks it fails the COMMIT
    // (PostgreSQL: a deferred UNIQUE; SQLite: a deferred foreign key; MySQL/MariaDB have neither)
    let deferred: string | undefined
    const count = async (table: string, where: string) => Number((await db.query<{n: number | string}>(sql`SELECT COUNT(*) AS n FROM ${raw(table)} WHERE ${raw(where)}`))[0].n)

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `cx${target.dialect.slice(0, 2)}`, {inbox: true, archive: false}))
      effects = `${names.outbox}_fx`
      await db.execute(sql`CREATE TABLE ${raw(effects)} (event_id VARCHAR(64) NOT NULL, note VARCHAR(64) NOT NULL)`)
      const table = `${names.outbox}_def`
      if (target.dialect === 'postgres') deferred = table
      if (target.dialect === 'postgres') await db.execute(sql`CREATE TABLE ${raw(table)} (event_id VARCHAR(64) NOT NULL, note VARCHAR(64) NOT NULL UNIQUE DEFERRABLE INITIALLY DEFERRED)`)
      if (target.dialect === 'sqlite') {
        deferred = table
        await db.execute(sql`CREATE TABLE ${raw(`${table}_parent`)} (id VARCHAR(64) PRIMARY KEY)`)
        await db.execute(sql`CREATE TABLE ${raw(table)} (event_id VARCHAR(64) NOT NULL, note VARCHAR(64) NOT NULL REFERENCES ${raw(`${table}_parent`)} (id) DEFERRABLE INITIALLY DEFERRED)`)
      }
    })
    afterAll(async () => {
      await db?.execute(sql`DROP TABLE IF EXISTS ${raw(effects)}`).catch(() => {})
      if (deferred) for (const t of [deferred, `${deferred}_parent`]) await db?.execute(sql`DROP TABLE IF EXISTS ${raw(t)}`).catch(() => {})
      await closeTables(db, names)
    })

    for (const [i, kind] of [...KINDS[target.dialect], ...dbKinds(target.dialect)].entries()) {
      describe(kind.name, () => {
        let opened: Awaited<ReturnType<Kind['open']>>
        const name = `k${i}`
        const effectsOf = (id: string) => count(effects, `event_id = '${id}'`)
        const inboxOf = (id: string) => count(db.dialect.render.table(names, 'inbox'), `consumer LIKE '${name}%' AND event_id = '${id}'`)
        const consumer = (suffix = '', checkVersion = false) => new Consumer(opened.executor, {consumer: name + suffix, tables: names, checkVersion})

        beforeAll(async () => {
          opened = await kind.open(target.url)
        })
        afterAll(() => opened?.close())

        it('the effect, through the tx it is given, commits with the inbox row; a duplicate is skipped', async () => {
          const event = {id: uuidv7(), aggregateId: 'order-1'}
          const c = consumer()
          expect(await c.handle(event, (tx) => kind.write(tx, effects, event.id, 'first'))).toBe('applied')
          expect(await c.handle(event, (tx) => kind.write(tx, effects, event.id, 'again'))).toBe('duplicate')
          expect([await effectsOf(event.id), await inboxOf(event.id)]).toEqual([1, 1])
        })

        it('an effect that throws rolls back its own write and the inbox row; the retry applies it', async () => {
          const event = {id: uuidv7(), aggregateId: 'order-2'}
          const c = consumer()
          await expect(c.handle(event, async (tx) => {
            await kind.write(tx, effects, event.id, 'doomed')
            throw new Error('smtp down')
          })).rejects.toThrow('smtp down')
          expect([await effectsOf(event.id), await inboxOf(event.id)]).toEqual([0, 0])
          expect(await c.handle(event, (tx) => kind.write(tx, effects, event.id, 'retried'))).toBe('applied')
          expect([await effectsOf(event.id), await inboxOf(event.id)]).toEqual([1, 1])
        })

        it('one event delivered twice at once is applied once', async () => {
          const event = {id: uuidv7(), aggregateId: 'order-3'}
          const c = consumer()
          const slow = (tx: unknown) => delay(200).then(() => kind.write(tx, effects, event.id, 'twice'))
          const outcomes = await Promise.all([c.handle(event, slow), c.handle(event, slow)])
          expect(outcomes.sort()).toEqual(['applied', 'duplicate'])
          expect(await effectsOf(event.id)).toBe(1)
        })

        it('handleBatch: one transaction for all; the effect that throws in the middle is undone alone; duplicates skipped, inside the batch too', async () => {
          const c = consumer('-b')
          const seen = {id: uuidv7(), aggregateId: 'order-b0'}
          expect(await c.handle(seen, (tx) => kind.write(tx, effects, seen.id, 'before'))).toBe('applied')
          const [a, b, failing, d] = [1, 2, 3, 4].map((n) => ({id: uuidv7(), aggregateId: `order-b${n}`}))
          const write = (event: {id: string}) => (tx: unknown) => kind.write(tx, effects, event.id, 'batched')
          const results = await c.handleBatch([
            {event: a, effect: write(a)},
            {event: b, effect: write(b)},
            {event: seen, effect: write(seen)},
            {event: failing, effect: async (tx) => {
              await kind.write(tx, effects, failing.id, 'doomed')
              throw new Error('smtp down')
            }},
            {event: a, effect: write(a)},
            {event: d, effect: write(d)},
          ])
          expect(results.map((r) => r.outcome ?? (r.error as Error).message)).toEqual(['applied', 'applied', 'duplicate', 'smtp down', 'duplicate', 'applied'])
          for (const e of [a, b, d, seen]) expect([await effectsOf(e.id), await inboxOf(e.id)]).toEqual([1, 1])
          expect([await effectsOf(failing.id), await inboxOf(failing.id)]).toEqual([0, 0])
        })

        it('handleBatch: a COMMIT that fails throws, and nothing of the batch stays', async (context) => {
          if (!deferred) return context.skip()
          const c = consumer('-c')
          const events = [1, 2, 3].map((n) => ({id: uuidv7(), aggregateId: `order-c${n}`}))
          const batch = events.map((event) => ({event, effect: async (tx: unknown) => {
            await kind.write(tx, effects, event.id, 'lost')
            if (event === events[1]) await kind.write(tx, deferred!, event.id, `clash-${name}`) // twice: checked at COMMIT
            if (event === events[1]) await kind.write(tx, deferred!, event.id, `clash-${name}`)
          }}))
          await expect(c.handleBatch(batch)).rejects.toThrow()
          for (const e of events) expect([await effectsOf(e.id), await inboxOf(e.id)]).toEqual([0, 0])
          // the connection is usable afterwards, and the events apply once delivered again
          expect((await c.handleBatch(events.map((event) => ({event, effect: (tx: unknown) => kind.write(tx, effects, event.id, 'again')})))).map((r) => r.outcome)).toEqual(['applied', 'applied', 'applied'])
        })

        // One handler's effect is slow and the other arrives 100 ms later. Without the per-aggregate
        // lock both read the same max version: v2 lands after v3, and v4 applies after v5. On a
        // MySQL connection at REPEATABLE READ the later one must read after the lock, not before.
        it('with checkVersion, two handlers of one aggregate take turns: an older version never lands over a newer', async () => {
          const c = consumer('-v', true)
          const v = (version: number) => ({id: uuidv7(), aggregateType: 'order', aggregateId: `order-v${i}`, aggregateVersion: version})
          const [v1, v2, v3, v4, v5] = [v(1), v(2), v(3), v(4), v(5)]
          const order: number[] = []
          const apply = (event: typeof v1, ms = 0) => (tx: unknown) => delay(ms).then(() => kind.write(tx, effects, event.id, `v${event.aggregateVersion}`)).then(() => void order.push(event.aggregateVersion))
          const slowThenFast = async (slow: typeof v1, fast: typeof v1) => {
            const first = c.handle(slow, apply(slow, 300))
            await delay(100)
            return Promise.all([first, c.handle(fast, apply(fast))])
          }
          expect(await c.handle(v1, apply(v1))).toBe('applied')
          expect(await slowThenFast(v2, v3)).toEqual(['applied', 'applied'])
          expect(await slowThenFast(v5, v4)).toEqual(['applied', 'stale'])
          expect(order).toEqual([1, 2, 3, 5])
          expect([await effectsOf(v4.id), await inboxOf(v4.id)]).toEqual([0, 1])
        })
      })
    }

    it('refuses a Kysely transaction (it opens its own) and what is no executor, naming what to pass', async () => {
      const kysely = await db.kysely()
      await kysely.transaction().execute(async (trx) => {
        expect(() => new Consumer(trx, {consumer: 'x', tables: names})).toThrow(expect.objectContaining({message: 'Consumer was given a Kysely transaction', hint: expect.stringMatching(/^Pass the Kysely instance/)}))
      })
      const refused = (() => {
        try {
          new Consumer({query() {}}, {consumer: 'x', tables: names})
        } catch (error) {
          return error as {message: string; hint: string}
        }
      })()
      expect(refused?.message).toBe('unsupported executor')
      expect(refused?.hint).toBe('Pass a pg Pool or Client, a mysql2/promise pool or connection, a Kysely instance, a better-sqlite3 Database, or a Db from openDb')
    })
  })
}
