// writeEvent's executor check, on every dialect: whatever is not inside the caller's transaction
// (a pool, a Kysely instance, the library's Db, a better-sqlite3 Database outside one) is refused
// with one and the same line, and nothing is written; a Kysely transaction is taken.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {Kysely, SqliteDialect} from 'kysely'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {sqlitePath} from '../../src/db/url.js'
import {writeEvent, writeEventSync, type NewEvent} from '../../src/producer.js'
import {count} from '../helpers/events.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const event: NewEvent = {eventType: 'order.created', aggregateId: 'order-refused', payload: {}}
const NOT_IN_TRANSACTION =
  'writeEvent runs inside your transaction, and the executor it was given is not in one. Pass what the transaction runs on: a pg client after BEGIN, a mysql2/promise connection after beginTransaction(), a Kysely transaction (trx), or call writeEventSync inside a better-sqlite3 transaction'

/** The error's one line, as the CLI would print it. */
async function refusal(write: () => unknown): Promise<string> {
  try {
    await write()
  } catch (error) {
    return (error as {line(): string}).line()
  }
  return 'not refused'
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`writeEvent's executor check, ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let tables: Partial<TableNames>
    const closers: (() => unknown)[] = []

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `pr${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
      tables = names
    })
    afterAll(async () => {
      for (const close of closers) await close()
      await closeTables(db, names)
    })

    /** The executors of this dialect that are not inside a transaction. */
    async function outsideTransactions(): Promise<[string, () => unknown][]> {
      const kysely = await db.kysely()
      const common: [string, () => unknown][] = [
        ['a Kysely instance', () => writeEvent(kysely, event, {tables})],
        ['the library\'s Db', () => writeEvent(db, event, {tables})],
      ]
      if (target.dialect === 'postgres') {
        const pool = new (await import('pg')).default.Pool({connectionString: target.url})
        closers.push(() => pool.end())
        return [['a pg Pool', () => writeEvent(pool, event, {tables})], ...common]
      }
      if (target.dialect === 'mysql') {
        const pool = (await import('mysql2/promise')).default.createPool(target.url)
        closers.push(() => pool.end())
        return [['a mysql2/promise pool', () => writeEvent(pool, event, {tables})], ...common]
      }
      const database = new (await import('better-sqlite3')).default(sqlitePath(target.url))
      closers.push(() => database.close())
      return [['a better-sqlite3 Database outside a transaction (writeEventSync)', () => writeEventSync(database, event, {tables})], ...common]
    }

    it('refuses every executor outside a transaction with the same line, and writes nothing', async () => {
      const refused: Record<string, string> = {}
      for (const [name, write] of await outsideTransactions()) refused[name] = await refusal(write)
      expect(Object.keys(refused).length).toBeGreaterThanOrEqual(3)
      for (const line of Object.values(refused)) expect(line).toBe(NOT_IN_TRANSACTION)
      expect(await count(db, names)).toBe(0)
    })

    it('takes a Kysely transaction, and it commits with it', async () => {
      const kysely = target.dialect === 'sqlite' ? new Kysely<any>({dialect: new SqliteDialect({database: new (await import('better-sqlite3')).default(sqlitePath(target.url))})}) : await db.kysely()
      if (target.dialect === 'sqlite') closers.push(() => kysely.destroy())
      const id = await kysely.transaction().execute((trx) => writeEvent(trx, {...event, aggregateId: 'order-kysely'}, {tables}))
      expect(await count(db, names, `id = '${id}'`)).toBe(1)
    })

    it.runIf(target.dialect === 'sqlite')('refuses better-sqlite3 given to writeEvent: it is synchronous', async () => {
      const database = new (await import('better-sqlite3')).default(sqlitePath(target.url))
      closers.push(() => database.close())
      expect(await refusal(() => writeEvent(database, event, {tables}))).toMatch(/synchronous driver.*Use writeEventSync\(database, event\) inside database.transaction/)
    })

    it.runIf(target.dialect === 'mysql')('refuses a mysql2 callback connection or pool: its failures would reach nobody', async () => {
      const callback = (await import('mysql2')).default
      const connection = callback.createConnection(target.url)
      const pool = callback.createPool(target.url)
      closers.push(() => connection.end(), () => new Promise((resolve) => pool.end(resolve)))
      for (const executor of [connection, pool]) expect(await refusal(() => writeEvent(executor, event, {tables}))).toMatch(/callback connection or pool.*Pass its .promise\(\)/)
      expect(await count(db, names, `aggregate_id = 'order-refused'`)).toBe(0)
    })
  })
}
