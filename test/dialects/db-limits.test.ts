// Bounded waits in the library: a pool with every connection checked out, and a statement
// timeout. Each must reject with one line (no password in it) instead of hanging, and leave
// the pool usable. Durations are never asserted: the upper bounds only catch a hang.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql} from '../../dialects/index.js'
import {describeDbError, openDb, type Db} from '../../src/db/index.js'
import {ConnectionError} from '../../src/core/errors.js'
import {applyInit} from '../../src/schema/init.js'
import {cliAsync} from '../helpers/cli.js'
import {dedicatedLogin, type DedicatedLogin} from '../helpers/logins.js'
import {dropTables, targets, uniqueTables} from '../helpers/targets.js'

const matrix = await targets()
/** far above any bound used here: only a hang gets near it */
const HANG_MS = 30_000
/** the bound the pools wait for a free connection */
const WAIT_MS = 400

/** What a caller shows the user: describeDbError's one line. */
async function rejection(promise: Promise<unknown>, url: string): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error, 'expected a rejection').toBeDefined()
  const mapped = describeDbError(error, url)
  expect(mapped).toBeInstanceOf(ConnectionError)
  const line = mapped.line()
  expect(line.split('\n')).toHaveLength(1)
  return line
}

function expectNoPassword(text: string, url: string) {
  const password = decodeURIComponent(new URL(url).password)
  expect(password, 'the test URL must carry a password').not.toBe('')
  expect(text).not.toContain(password)
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`bounded waits on ${target.dialect}`, () => {
    let admin: Db
    let login: DedicatedLogin | undefined
    /** the URL under test: with a password the server ignores (PostgreSQL trust) or checks (a MariaDB login of our own) */
    let url: string
    const table = `t_limits_${Math.random().toString(16).slice(2, 8)}`

    beforeAll(async () => {
      admin = await openDb(target.url)
      if (target.dialect === 'mysql') {
        login = await dedicatedLogin(admin, target.url, 'limits')
        url = login.url
      } else if (target.dialect === 'postgres') {
        const u = new URL(target.url)
        u.password = 'pool-limit-secret'
        url = u.toString()
      } else {
        url = target.url
      }
      await admin.execute(sql`${raw(`CREATE TABLE ${table} (id INTEGER)`)}`)
    })
    afterAll(async () => {
      await admin.execute(sql`${raw(`DROP TABLE IF EXISTS ${table}`)}`).catch(() => {})
      await login?.drop()
      await admin.close()
    })

    const server = target.dialect !== 'sqlite'
    if (server) {
      it(
        'a pool of 1 with a transaction held open: query, transaction and Kysely reject with one line, the holder commits, nothing leaks',
        async () => {
          const db = await openDb(url, {poolSize: 1, connectTimeoutMs: WAIT_MS})
          let finish!: () => void
          const held = new Promise<void>((resolve) => (finish = resolve))
          try {
            let started!: () => void
            const inside = new Promise<void>((resolve) => (started = resolve))
            const holder = db.transaction(async (tx) => {
              await tx.execute(sql`${raw(`INSERT INTO ${table} (id) VALUES (1)`)}`)
              started()
              await held
            })
            await inside

            const kysely = await db.kysely()
            const waiters = {
              query: db.query(sql`SELECT 1 AS one`),
              transaction: db.transaction((tx) => tx.query(sql`SELECT 1 AS one`)),
              kysely: kysely.selectNoFrom((eb) => eb.lit(1).as('one')).execute(),
            }
            for (const [what, waiter] of Object.entries(waiters)) {
              const line = await rejection(waiter, url)
              expect(line, what).toBe(
                `no free connection in the pool after ${WAIT_MS / 1000} s (its one connection in use). ` +
                  'Use a larger pool (poolSize) or shorter transactions; inside transaction() query through its tx, not the db',
              )
              expectNoPassword(line, url)
            }

            finish()
            await holder
            expect(await db.query(sql`${raw(`SELECT id FROM ${table}`)}`)).toEqual([{id: 1}])
            // the connection the waiters gave up on came back to the pool: more turns than the pool has connections
            for (let i = 0; i < 3; i++) {
              expect(await db.query(sql`SELECT 1 AS one`)).toEqual([{one: 1}])
              await db.transaction((tx) => tx.execute(sql`${raw(`DELETE FROM ${table}`)}`))
              expect(await kysely.selectNoFrom((eb) => eb.lit(1).as('one')).execute()).toEqual([{one: 1}])
            }
          } finally {
            finish() // a failed assertion must not leave the holder open (close() would wait for it)
            await db.close()
          }
        },
        HANG_MS,
      )
    }

    if (!server) {
      it(
        'SQLite: a query on the db awaited inside its own transaction rejects instead of waiting on itself; the connection stays usable',
        async () => {
          const db = await openDb(url, {connectTimeoutMs: WAIT_MS})
          try {
            const nested = db.transaction(async (tx) => {
              await tx.execute(sql`${raw(`INSERT INTO ${table} (id) VALUES (1)`)}`)
              await db.query(sql`SELECT 1 AS one`) // the mistake: db, not tx
            })
            const line = await rejection(nested, url)
            expect(line).toBe(
              `no free connection after ${WAIT_MS / 1000} s (the SQLite connection stayed in use). ` +
                'Keep transactions shorter; inside transaction() query through its tx, not the db',
            )
            // the transaction rolled back and the connection serves the next callers in order
            const later = await Promise.all([db.query(sql`${raw(`SELECT id FROM ${table}`)}`), db.query(sql`SELECT 1 AS one`)])
            expect(later).toEqual([[], [{one: 1}]])
          } finally {
            await db.close()
          }
        },
        HANG_MS,
      )
    }

    if (server) {
      it(
        'a statement cancelled by another session (pg_cancel_backend, KILL QUERY) rejects with one line naming it',
        async () => {
          const db = await openDb(url, {poolSize: 1})
          // the statement to cancel waits on a row lock: no CPU burnt while other test files run
          const marker = `cancel_me_${Math.random().toString(16).slice(2, 8)}`
          await admin.execute(sql`${raw(`INSERT INTO ${table} (id) VALUES (42)`)}`)
          try {
            await admin.transaction(async (holder) => {
              await holder.query(sql`${raw(`SELECT id FROM ${table} WHERE id = 42 FOR UPDATE`)}`)
              const outcome = rejection(db.query(sql`${raw(`SELECT id AS ${marker} FROM ${table} WHERE id = 42 FOR UPDATE`)}`), url)
              const find =
                target.dialect === 'postgres'
                  ? sql`SELECT pid AS id FROM pg_stat_activity WHERE query LIKE ${`%${marker}%`} AND pid <> pg_backend_pid()`
                  : sql`SELECT id FROM information_schema.processlist WHERE info LIKE ${`%${marker}%`} AND id <> CONNECTION_ID()`
              let id: unknown
              for (let i = 0; i < 100 && id === undefined; i++) {
                id = (await admin.query<{id: unknown}>(find))[0]?.id
                if (id === undefined) await new Promise((r) => setTimeout(r, 50))
              }
              expect(id, 'the waiting statement never showed up').toBeDefined()
              await admin.query(target.dialect === 'postgres' ? sql`SELECT pg_cancel_backend(${Number(id)})` : sql`${raw(`KILL QUERY ${Number(id)}`)}`)
              const line = await outcome
              expect(line).toMatch(/^a statement was cancelled by another session \(.+\); its transaction was rolled back\. Rerun/)
              expectNoPassword(line, url)
            })
            expect(await db.query(sql`SELECT 1 AS one`)).toEqual([{one: 1}])
          } finally {
            await db.close()
            await admin.execute(sql`${raw(`DELETE FROM ${table} WHERE id = 42`)}`)
          }
        },
        HANG_MS,
      )

      it(
        'a statement over statementTimeoutMs rejects with one line and the connection stays usable',
        async () => {
          const db = await openDb(url, {poolSize: 1, statementTimeoutMs: 200})
          try {
            const sleep = target.dialect === 'postgres' ? sql`SELECT pg_sleep(2)` : sql`SELECT SLEEP(2)`
            const line = await rejection(db.query(sleep), url)
            expect(line).toMatch(/^a statement ran longer than the statement timeout \(.+\)\. Make it cheaper .* or raise the timeout/)
            expectNoPassword(line, url)
            expect(await db.query(sql`SELECT 1 AS one`)).toEqual([{one: 1}])
          } finally {
            await db.close()
          }
        },
        HANG_MS,
      )

      // The CLI sets no pool or statement timeout of its own, but a login can carry one on the
      // server (ALTER ROLE ... SET statement_timeout, MariaDB's per-user MAX_STATEMENT_TIME):
      // `outbox status` blocked on a locked table is then cancelled by the server and must say so.
      it('status cancelled by the timeout while waiting on a lock: exit 2, one line, no password', async () => {
        const names = uniqueTables('lim')
        await applyInit(admin, names, {inbox: false, archive: false})
        const login = await dedicatedLogin(admin, target.url, 'stmt_limit')
        const outbox = admin.dialect.render.table(names, 'outbox')
        const u = new URL(login.url)
        if (target.dialect === 'postgres') {
          await admin.execute(sql`${raw(`ALTER ROLE ${login.user} SET statement_timeout = '300ms'`)}`)
          u.password = 'stmt-limit-secret' // trust auth ignores it; it must not show up
        } else {
          for (const host of ['%', 'localhost']) await admin.execute(sql`${raw(`ALTER USER '${login.user}'@'${host}' WITH MAX_STATEMENT_TIME 0.3`)}`)
        }
        const holder = await openDb(target.url, {poolSize: 1})
        try {
          const result = await holder.transaction(async (tx) => {
            await tx.execute(target.dialect === 'postgres' ? sql`${raw(`LOCK TABLE ${outbox} IN ACCESS EXCLUSIVE MODE`)}` : sql`${raw(`LOCK TABLES ${outbox} WRITE`)}`)
            try {
              return await cliAsync(['status', '--url', u.toString(), '--table', names.outbox, '--timeout', '60s']).done
            } finally {
              if (target.dialect === 'mysql') await tx.execute(sql`UNLOCK TABLES`)
            }
          })
          expect(result.status, result.stderr).toBe(2)
          expect(result.stderr.trim().split('\n'), result.stderr).toHaveLength(1)
          expect(result.stderr).toMatch(/^outbox: a statement ran longer than the statement timeout \(.+\)\. Make it cheaper/)
          expectNoPassword(result.stderr, u.toString())
        } finally {
          await holder.close()
          await login.drop()
          await dropTables(admin, names)
        }
      })
    }
  })
}
