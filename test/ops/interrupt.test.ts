// replay and archive stopped part-way, the way production stops them: SIGTERM (a deploy, a
// CI job cancelled), the server going away (every connection cut, nothing listening), and
// the session killed by an operator (pg_terminate_backend / KILL) while status waits on a
// lock. Expected every time: the run ends on a batch boundary (a batch committed whole or
// not at all), the exit code says it did not finish, one line or a summary says what was
// done, and a rerun finishes the job.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {databaseNow} from '../../src/ops/query.js'
import {cli, cliAsync} from '../helpers/cli.js'
import {dedicatedLogin} from '../helpers/logins.js'
import {TcpProxy} from '../helpers/proxy.js'
import {until} from '../helpers/publishers.js'
import {clear, ids, inExactlyOneTable, insertRows, type RowSpec} from '../helpers/rows.js'
import {targets, type Target} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const DAY = 86_400
// enough batches that a run is still going when the test signals it (SQLite moves a batch in well under a millisecond)
const ROWS_BY_DIALECT = {postgres: 3000, mysql: 3000, sqlite: 30_000}
// an odd batch size: a half-done batch could not hide behind a round number
const BATCH = 7

/** `n` events, all published 40 days ago: every one qualifies for archive --before 30d and replay --since 60d. */
function publishedRows(n: number): RowSpec[] {
  return Array.from({length: n}, (_, i) => ({type: i % 2 ? 'a' : 'b', created: -50 * DAY + i, published: -40 * DAY + i}))
}

/** The same URL through a local TCP proxy, so the test can make the server vanish for that command only. */
function viaProxy(url: string, proxy: TcpProxy): string {
  const u = new URL(url)
  u.hostname = '127.0.0.1'
  u.port = String(proxy.port)
  return u.toString()
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`replay and archive stopped part-way on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let all: string[]
    const ROWS = ROWS_BY_DIALECT[target.dialect]
    const tableFlags = () => ['--table', names.outbox, '--archive-table', names.archive]
    const archiveArgs = (url = target.url) => ['archive', '--url', url, ...tableFlags(), '--before', '30d', '--batch', String(BATCH), '--yes', '--json']
    const replayArgs = (url = target.url, since = '60d') => ['replay', '--url', url, ...tableFlags(), '--since', since, '--batch', String(BATCH), '--yes', '--json']
    const pendingCount = async () => (await ids(db, names, 'outbox', 'published_at IS NULL')).length

    async function reset() {
      await clear(db, names)
      all = (await insertRows(db, names, await databaseNow(db), publishedRows(ROWS))).sort()
    }

    /**
     * A statement on `table` (this file's own) waits on a row lock. MariaDB 10.11's innodb_trx
     * leaves the waiting batch out (and processlist's time can count from before the statement),
     * so there the InnoDB monitor's line for the lock being waited on, which names the table.
     */
    async function waitsOnRowLock(table: string): Promise<boolean> {
      if (db.dialect.name === 'postgres') {
        const waiting = sql`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ${`%${table}%`} AND pid <> pg_backend_pid()`
        return (await db.query(waiting)).length > 0
      }
      const [monitor] = await db.query<{Status: string}>(sql`SHOW ENGINE INNODB STATUS`)
      return String(monitor?.Status ?? '').split('\n').some((line) => line.includes(`.${table} trx id`) && line.endsWith(' waiting'))
    }

    /** Every event is in exactly one of the two tables; returns how many were archived. */
    const exactlyOnce = () => inExactlyOneTable(db, names, all)

    /** Starts a CLI run and returns it once at least `rows` changes have committed. */
    async function startAndWaitFor(args: string[], progress: () => Promise<number>, rows = 10 * BATCH) {
      const run = cliAsync(args)
      await until(async () => (await progress()) >= rows, 20_000, `${rows} rows changed by ${args[0]}`)
      return run
    }

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `int${target.dialect.slice(0, 2)}`, {inbox: false, archive: true}))
    })
    afterAll(() => closeTables(db, names))

    it('SIGTERM during archive: the batch in flight commits, the run stops with exit 143 and a summary; a rerun finishes', async () => {
      await reset()
      const run = await startAndWaitFor(archiveArgs(), async () => (await ids(db, names, 'archive')).length)
      run.child.kill('SIGTERM')
      const result = await run.done
      expect(result.status, result.stderr).toBe(143)
      expect(result.stderr).toContain('SIGTERM: stopping after the batch in flight commits')
      const report = JSON.parse(result.stdout)
      expect(report).toMatchObject({interrupted: true, dryRun: false})
      const archived = await exactlyOnce()
      expect(report.archived).toBe(archived)
      expect(archived % BATCH).toBe(0)
      expect(archived).toBeLessThan(ROWS)

      const rerun = cli(archiveArgs())
      expect(rerun.status, rerun.stderr).toBe(0)
      expect(JSON.parse(rerun.stdout)).toMatchObject({interrupted: false, archived: ROWS - archived})
      expect(await exactlyOnce()).toBe(ROWS)
    })

    it('SIGTERM during replay: whole batches replayed, exit 143, and --since doneThrough continues where it stopped', async () => {
      await reset()
      const run = await startAndWaitFor(replayArgs(), pendingCount)
      run.child.kill('SIGTERM')
      const result = await run.done
      expect(result.status, result.stderr).toBe(143)
      const report = JSON.parse(result.stdout)
      expect(report).toMatchObject({interrupted: true})
      const replayed = await pendingCount()
      expect(report.replayed).toBe(replayed)
      expect(replayed % BATCH).toBe(0)
      expect(replayed).toBeLessThan(ROWS)
      expect(report.doneThrough).toMatch(/^\d{4}-\d\d-\d\dT/)

      const rerun = cli(replayArgs(target.url, report.doneThrough))
      expect(rerun.status, rerun.stderr).toBe(0)
      // the rerun starts at the last row done (inclusive), so at most a few rows are replayed twice
      const again = JSON.parse(rerun.stdout).replayed
      expect(again).toBeGreaterThanOrEqual(ROWS - replayed)
      expect(again).toBeLessThanOrEqual(ROWS - replayed + 2)
      expect(await pendingCount()).toBe(ROWS)
    })

    // SQLite is left out: a batch waiting for the write lock blocks the event loop in the busy timeout (5 s) and then fails on its own
    it.skipIf(target.dialect === 'sqlite')('a second SIGTERM exits at once; the batch in flight (blocked on a row lock) rolls back', async () => {
      await reset()
      const table = db.dialect.render.table(names, 'outbox')
      const inOrder = await db.query<{id: string}>(sql`SELECT id FROM ${raw(table)} ORDER BY created_at, id`)
      const locked = inOrder[20 * BATCH].id
      let result!: Awaited<ReturnType<typeof cliAsync>['done']>
      await db.transaction(async (tx) => {
        // hold a row of batch 21: batches 1-20 commit, batch 21 waits on the lock
        await tx.query(sql`SELECT id FROM ${raw(table)} WHERE id = ${locked} FOR UPDATE`)
        const run = cliAsync(archiveArgs())
        // waiting on the lock, not between two batches: a first SIGTERM there ends the run at once
        await until(() => waitsOnRowLock(table), 20_000, 'the batch reaching the locked row to wait on it')
        expect((await ids(db, names, 'archive')).length).toBe(20 * BATCH)
        run.child.kill('SIGTERM')
        await until(() => run.output().stderr.includes('SIGTERM: stopping'), 10_000, 'the first SIGTERM acknowledged')
        run.child.kill('SIGTERM')
        result = await run.done
      })
      expect(result.status, result.stderr).toBe(143)
      expect(result.stderr).toMatch(/SIGTERM again: exiting now; the batch in flight rolls back/)
      expect(await exactlyOnce()).toBe(20 * BATCH)
    })

    it.skipIf(target.dialect === 'sqlite')('--timeout while a batch waits on a lock: exit 2, one line, the batch rolls back', async () => {
      await reset()
      const table = db.dialect.render.table(names, 'outbox')
      const inOrder = await db.query<{id: string}>(sql`SELECT id FROM ${raw(table)} ORDER BY created_at, id`)
      let result!: Awaited<ReturnType<typeof cliAsync>['done']>
      await db.transaction(async (tx) => {
        await tx.query(sql`SELECT id FROM ${raw(table)} WHERE id = ${inOrder[20 * BATCH].id} FOR UPDATE`)
        result = await cliAsync([...archiveArgs(), '--timeout', '3s']).done
      })
      expect(result.status, result.stderr).toBe(2)
      const errors = result.stderr.trim().split('\n').filter((l) => l.startsWith('outbox:'))
      expect(errors, result.stderr).toHaveLength(1)
      expect(errors[0]).toMatch(/^outbox: timed out after 3s/)
      expect(await exactlyOnce()).toBe(20 * BATCH)
    })

    it('the human summary of an interrupted replay names the --since to continue from', async () => {
      await reset()
      const run = await startAndWaitFor(replayArgs().filter((a) => a !== '--json'), pendingCount)
      run.child.kill('SIGTERM')
      const result = await run.done
      expect(result.status).toBe(143)
      expect(result.stdout).toMatch(/interrupted: stopped after batch \d+, which committed; .*rerun with --since \d{4}-\d\d-\d\dT[\d:.]+Z/)
    })

    if (target.dialect !== 'sqlite') serverGoesAway(target, () => ({db, names, rows: ROWS, reset, exactlyOnce, archiveArgs, replayArgs, pendingCount, startAndWaitFor}))
  })
}

interface Fixture {
  db: Db
  names: TableNames
  rows: number
  reset: () => Promise<void>
  exactlyOnce: () => Promise<number>
  archiveArgs: (url?: string) => string[]
  replayArgs: (url?: string) => string[]
  pendingCount: () => Promise<number>
  startAndWaitFor: (args: string[], progress: () => Promise<number>) => Promise<ReturnType<typeof cliAsync>>
}

/**
 * Exit 2 and one error line naming the lost connection; besides it stderr holds at most the
 * plan the command announced before it started ("archive: N events ..."). No stack, no password.
 */
function expectLostConnection(result: {status: number | null; stderr: string; stdout: string}, secret?: string) {
  expect(result.status, result.stderr).toBe(2)
  const lines = result.stderr.trim().split('\n')
  const errors = lines.filter((l) => l.startsWith('outbox:'))
  expect(errors, result.stderr).toHaveLength(1)
  expect(errors[0]).toMatch(/^outbox: (lost the connection to the database|cannot reach the database)/)
  expect(lines.filter((l) => !l.startsWith('outbox:') && !/^(archive|replay): \d+ /.test(l)), result.stderr).toEqual([])
  if (secret) expect(result.stderr + result.stdout).not.toContain(secret)
}

function serverGoesAway(target: Target, fixture: () => Fixture) {
  describe('the server goes away', () => {
    let proxy: TcpProxy
    const host = new URL(target.url)
    beforeAll(() => {
      proxy = new TcpProxy(host.hostname, Number(host.port))
    })
    afterAll(() => proxy.down())

    it('mid-archive: exit 2 with one line, no half-done batch, and a rerun finishes', async () => {
      const f = fixture()
      await f.reset()
      await proxy.up()
      const run = await f.startAndWaitFor(f.archiveArgs(viaProxy(target.url, proxy)), async () => (await ids(f.db, f.names, 'archive')).length)
      await proxy.down()
      expectLostConnection(await run.done)
      const archived = await f.exactlyOnce()
      expect(archived % BATCH).toBe(0)
      expect(archived).toBeLessThan(f.rows)
      expect(cli(f.archiveArgs()).status).toBe(0)
      expect(await f.exactlyOnce()).toBe(f.rows)
    })

    it('mid-replay: exit 2 with one line, whole batches only', async () => {
      const f = fixture()
      await f.reset()
      await proxy.up()
      const run = await f.startAndWaitFor(f.replayArgs(viaProxy(target.url, proxy)), f.pendingCount)
      await proxy.down()
      expectLostConnection(await run.done)
      const replayed = await f.pendingCount()
      expect(replayed % BATCH).toBe(0)
      expect(replayed).toBeLessThan(f.rows)
    })

    it('status, replay and archive against a server that is gone: exit 2 with one line, quickly', async () => {
      const f = fixture()
      await proxy.down()
      const gone = viaProxy(target.url, proxy)
      for (const args of [['status', '--url', gone, '--table', f.names.outbox], f.replayArgs(gone), f.archiveArgs(gone)]) {
        expectLostConnection(cli([...args, '--timeout', '30s']))
      }
    })

    it('no connection slot left (the login\'s connection limit is used up): exit 2 with one line naming it', async () => {
      const f = fixture()
      const login = await dedicatedLogin(f.db, target.url, 'slots')
      const user = login.user
      await f.db.execute(
        target.dialect === 'postgres'
          ? sql`${raw(`ALTER ROLE ${user} NOSUPERUSER CONNECTION LIMIT 1`)}` // superusers are exempt from the limit
          : sql`${raw(`ALTER USER '${user}'@'%' WITH MAX_USER_CONNECTIONS 1`)}`,
      )
      if (target.dialect === 'mysql') await f.db.execute(sql`${raw(`ALTER USER '${user}'@'localhost' WITH MAX_USER_CONNECTIONS 1`)}`)
      else for (const which of ['outbox', 'archive'] as const) await f.db.execute(sql`${raw(`GRANT ALL ON ${f.db.dialect.render.table(f.names, which)} TO ${user}`)}`)
      const holder = await openDb(login.url, {poolSize: 1})
      try {
        for (const args of [['status', '--url', login.url, '--table', f.names.outbox], f.archiveArgs(login.url)]) {
          const result = cli(args)
          expect(result.status, result.stderr).toBe(2)
          expect(result.stderr.trim().split('\n'), result.stderr).toHaveLength(1)
          expect(result.stderr).toMatch(/^outbox: the database refused a new connection: no connection slot left/)
          expect(result.stderr).not.toContain(new URL(login.url).password || '\u0000')
        }
      } finally {
        await holder.close()
        await login.drop()
      }
    })

    it('status waiting on a lock when an operator kills its session: exit 2 with one line', async () => {
      const f = fixture()
      const login = await dedicatedLogin(f.db, target.url, 'status_kill')
      const lockHolder = await openDb(target.url, {poolSize: 1})
      try {
        const table = f.db.dialect.render.table(f.names, 'outbox')
        const run = await lockAndRun(lockHolder, table, () => cliAsync(['status', '--url', login.url, '--table', f.names.outbox]), async () => {
          // kill the status session once it is blocked on the table
          await until(async () => (await login.blocked()) > 0, 20_000, 'status blocked on the lock')
          expect(await login.kill()).toBeGreaterThan(0)
        })
        const result = await run.done
        expectLostConnection(result, new URL(login.url).password || undefined)
      } finally {
        await lockHolder.close()
        await login.drop()
      }
    })
  })
}

/** Holds a lock that blocks reads of `table` (PostgreSQL ACCESS EXCLUSIVE, MariaDB LOCK TABLES ... WRITE) while `start()` runs into it. */
async function lockAndRun(holder: Db, table: string, start: () => ReturnType<typeof cliAsync>, whileBlocked: () => Promise<void>) {
  let run!: ReturnType<typeof cliAsync>
  if (holder.dialect.name === 'postgres') {
    await holder.transaction(async (tx) => {
      await tx.execute(sql`${raw(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)}`)
      run = start()
      await whileBlocked()
    })
  } else {
    await holder.execute(sql`${raw(`LOCK TABLES ${table} WRITE`)}`)
    try {
      run = start()
      await whileBlocked()
    } finally {
      await holder.execute(sql`UNLOCK TABLES`)
    }
  }
  return run
}
