// The claim's required behaviour under concurrency, on the real servers, through claimBatch
// and the dialect's claim plan (the relay's own code): a second session gets other rows at
// once (PostgreSQL, MySQL) or waits for the single writer (SQLite); LIMIT holds with stale
// statistics (PostgreSQL); READ COMMITTED, unblocked producers and an index-served ORDER BY
// (MySQL/MariaDB). Each behaviour has a control showing the test fails when the claim is wrong.
import {spawn} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type ClaimOptions, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {claimBatch, claimOn} from '../../src/relay/claim.js'
import {sqlitePath} from '../../src/db/url.js'
import {uuidv7} from '../../src/core/uuid.js'
import {VerifyContext} from '../../src/verify/context.js'
import {articleClaim, NESTED_LOOP_SETTINGS, withoutSkipLocked} from '../helpers/broken-claims.js'
import {count, seedEvents} from '../helpers/events.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const opts = (owner: string, batch = 2): ClaimOptions => ({batch, leaseMs: 60_000, owner})
const idsOf = (events: {id: string}[]) => events.map((e) => e.id)
// A session-wide lock wait of one second: waiting shows up as an error, not a hang.
const SESSION_LOCK_TIMEOUT: Record<string, string> = {postgres: "SET lock_timeout = '1s'", mysql: 'SET SESSION innodb_lock_wait_timeout = 1'}

for (const target of matrix) {
  describe.skipIf(!target.available)(`claim concurrency on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let ctx: VerifyContext
    const table = () => raw(db.dialect.render.table(names, 'outbox'))

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `cc${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
      const [row] = await db.query<{version: string}>(db.dialect.verify.serverVersion())
      ctx = new VerifyContext(target.url, db, names, String(row.version), {})
    })
    afterAll(async () => {
      await ctx?.closeSessions()
      await closeTables(db, names)
    })

    async function fresh(n: number): Promise<string[]> {
      await db.execute(sql`DELETE FROM ${table()}`)
      return seedEvents(db, names, {count: n})
    }

    async function owners(): Promise<Record<string, string | null>> {
      const rows = await db.query<{id: string; lease_owner: string | null}>(sql`SELECT id, lease_owner FROM ${table()}`)
      return Object.fromEntries(rows.map((r) => [String(r.id), r.lease_owner]))
    }

    async function lockTimedSession(): Promise<Db> {
      const session = await ctx.session()
      await session.execute(sql`${raw(SESSION_LOCK_TIMEOUT[target.dialect])}`)
      return session
    }

    // Two events of one aggregate written within a millisecond (one transaction) go out in the
    // order they were written: the claim orders by (created_at, id) to the precision the
    // database keeps, and ids made in one millisecond ascend (uuidv7 is monotonic). Before, the
    // relay re-sorted by millisecond and then by id, which was random within a millisecond.
    it('events written within one millisecond are claimed in the order they were written', async () => {
      await db.execute(sql`DELETE FROM ${table()}`)
      const written: string[] = []
      await db.transaction(async (tx) => {
        for (let version = 1; version <= 40; version++) {
          const id = uuidv7()
          written.push(id)
          await tx.execute(db.dialect.events.insertEvent(names, {id, eventType: 'order.changed', aggregateType: 'order', aggregateId: 'order-1', aggregateVersion: version, payload: '{}', headers: null}))
        }
      })
      expect(idsOf(await claimBatch(db, names, opts('relay-order', 100)))).toEqual(written)
    })

    if (target.dialect !== 'sqlite') {
      it('a second session gets the next rows at once while the first holds its claim transaction open', async () => {
        const ids = await fresh(4)
        const first = await ctx.hold(await ctx.session(), opts('relay-a'))
        expect(idsOf(first.events)).toEqual(ids.slice(0, 2))
        const second = await claimBatch(await lockTimedSession(), names, opts('relay-b'))
        expect(idsOf(second)).toEqual(ids.slice(2, 4))
        await first.release()
        expect(await owners()).toEqual({[ids[0]]: 'relay-a', [ids[1]]: 'relay-a', [ids[2]]: 'relay-b', [ids[3]]: 'relay-b'})
      })

      it('control: without SKIP LOCKED the second session waits for the first (and times out here)', async () => {
        await fresh(4)
        const first = await ctx.hold(await ctx.session(), opts('relay-a'))
        try {
          const second = await lockTimedSession()
          const waiting = second.transaction((tx) => claimOn(tx, db.dialect, withoutSkipLocked(db.dialect)(names, opts('relay-b'))))
          const error = await waiting.then(() => undefined, (e: unknown) => e)
          expect(error, 'the claim without SKIP LOCKED did not wait').toBeDefined()
          expect(db.dialect.errors.isLockTimeout(error)).toBe(true)
        } finally {
          await first.release()
        }
      })

      it('a producer INSERT is not blocked by a claim in progress', async () => {
        await fresh(2)
        const held = await ctx.hold(await ctx.session(), opts('relay-a', 10)) // scans to the end of the pending range
        try {
          const producer = await lockTimedSession()
          await producer.transaction((tx) => tx.execute(ctx.insert(1)))
        } finally {
          await held.release()
        }
        expect(await count(db, names)).toBe(3)
      })
    }

    if (target.dialect === 'postgres') {
      it('LIMIT holds with stale statistics: analyzed at one row, then many inserted, a claim of 2 leases exactly 2', async () => {
        await db.execute(sql`DELETE FROM ${table()}`)
        await seedEvents(db, names, {count: 1})
        await db.execute(db.dialect.verify.analyze(names))
        await seedEvents(db, names, {count: 500, base: new Date(Date.now() - 1_800_000)})
        const [stats] = await db.query<{reltuples: number}>(sql`SELECT reltuples::float8 AS reltuples FROM pg_class WHERE relname = ${names.outbox}`)
        expect(stats.reltuples).toBe(1)
        expect(await claimBatch(db, names, opts('relay-a'))).toHaveLength(2)
        expect(await count(db, names, 'lease_owner IS NOT NULL')).toBe(2)

        // The plan stale statistics lead to: a nested loop that rescans the subquery per row.
        const session = await ctx.session()
        for (const s of NESTED_LOOP_SETTINGS) await session.execute(s)
        expect(await claimBatch(session, names, opts('relay-b'))).toHaveLength(2)
        expect(await count(db, names, 'lease_owner IS NOT NULL')).toBe(4)
        // control: the article's IN (SELECT ... LIMIT 2 FOR UPDATE SKIP LOCKED) under the same plan
        const article = await claimOn(session, db.dialect, articleClaim(names, opts('article')))
        expect(article.length).toBeGreaterThan(2)
      })
    }

    if (target.dialect === 'mysql') {
      it('runs at READ COMMITTED on every connection (@@tx_isolation on MariaDB, @@transaction_isolation on MySQL)', async () => {
        const [{version}] = await db.query<{version: string}>(db.dialect.verify.serverVersion())
        const variable = /mariadb/i.test(version) ? '@@tx_isolation' : '@@transaction_isolation'
        for (const session of [db, await ctx.session()]) {
          const [row] = await session.transaction((tx) => tx.query<{level: string}>(sql`SELECT ${raw(variable)} AS level`))
          expect(row.level).toBe('READ-COMMITTED')
          const [viaDialect] = await session.transaction((tx) => tx.query<{level: string}>(db.dialect.verify.isolationLevel(version)!))
          expect(viaDialect.level).toBe('READ-COMMITTED')
        }
      })

      it('control: at REPEATABLE READ the same claim blocks the producer INSERT (gap locks)', async () => {
        await fresh(2)
        const claimer = await ctx.session()
        await claimer.execute(sql`SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ`)
        const held = await ctx.hold(claimer, opts('relay-a', 10))
        try {
          const producer = await lockTimedSession()
          const error = await producer.transaction((tx) => tx.execute(ctx.insert(1))).then(() => undefined, (e: unknown) => e)
          expect(db.dialect.errors.isLockTimeout(error)).toBe(true)
        } finally {
          await held.release()
        }
      })

      it("EXPLAIN shows the claim's ORDER BY served by the claim index, no filesort", async () => {
        const ids = await fresh(300)
        // a realistic table: most events published, a few pending
        await db.execute(sql`UPDATE ${table()} SET published_at = UTC_TIMESTAMP(6) WHERE id IN (${raw(ids.slice(0, 280).map((id) => `'${id}'`).join(', '))})`)
        await db.execute(db.dialect.verify.analyze(names))
        const plan = db.dialect.relay.claim(names, opts('relay-a', 25))
        if (plan.kind !== 'lock-then-update') throw new Error('expected the two-statement claim')
        const rows = await db.query<{key: string | null; Extra: string | null; type: string}>(db.dialect.verify.explain(plan.lock))
        expect(rows).toHaveLength(1)
        expect(rows[0].key).toBe(`${names.outbox}_claim_idx`)
        expect(rows[0].Extra ?? '').not.toMatch(/filesort/i)
        expect(rows[0].type).not.toBe('ALL')
      })
    }

    if (target.dialect === 'sqlite') {
      it('a second writer gets SQLITE_BUSY while the first holds BEGIN IMMEDIATE, then other rows after its commit', async () => {
        const ids = await fresh(4)
        const first = await ctx.hold(await ctx.session(), opts('relay-a'))
        expect(idsOf(first.events)).toEqual(ids.slice(0, 2))
        const second = await ctx.session(50)
        await expect(claimBatch(second, names, opts('relay-b'))).rejects.toMatchObject({code: 'SQLITE_BUSY'})
        expect(await owners()).toEqual(Object.fromEntries(ids.map((id) => [id, null]))) // nothing committed yet
        await first.release()
        expect(idsOf(await claimBatch(second, names, opts('relay-b')))).toEqual(ids.slice(2, 4))
      })

      it('a second process waits for the single writer, then claims the other rows', async () => {
        const ids = await fresh(4)
        const first = await ctx.hold(await ctx.session(), opts('relay-a'))
        const {text, params} = db.dialect.render.compile((db.dialect.relay.claim(names, opts('relay-b')) as {statement: never}).statement)
        const child = spawn(process.execPath, ['-e', CHILD], {env: {...process.env, DB: sqlitePath(target.url), TEXT: text, PARAMS: JSON.stringify(params)}})
        let out = ''
        child.stdout.on('data', (d) => (out += d))
        const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
        await until(() => out.includes('claiming'))
        await new Promise((r) => setTimeout(r, 300))
        expect(child.exitCode, 'the second process finished while the first held the write lock').toBeNull()
        await first.release()
        expect(await exited).toBe(0)
        expect(JSON.parse(out.split('\n')[1]).sort()).toEqual(ids.slice(2, 4).sort())
      })
    }
  })
}

// The second process: better-sqlite3 with a long busy timeout, running the dialect's claim.
const CHILD = `
const Database = require('better-sqlite3')
const db = new Database(process.env.DB, {timeout: 20000})
process.stdout.write('claiming\\n')
const rows = db.prepare(process.env.TEXT).all(...JSON.parse(process.env.PARAMS))
process.stdout.write(JSON.stringify(rows.map((r) => r.id)) + '\\n')
`

async function until(condition: () => boolean) {
  while (!condition()) await new Promise((r) => setTimeout(r, 10))
}
