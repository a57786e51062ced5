// The dialect matrix: every generated statement runs against real PostgreSQL, MariaDB and SQLite.
import {spawnSync} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type ClaimOptions, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {applyInit, initPlan, renderInitScript} from '../../src/schema/init.js'
import {claimBatch, markPublished, releaseLeases, retryEvent} from '../../src/relay/claim.js'
import {cliAsync} from '../helpers/cli.js'
import {count, seedEvents} from '../helpers/events.js'
import {dropTables, targets, uniqueTables} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const opts = (o: Partial<ClaimOptions> = {}): ClaimOptions => ({batch: 2, leaseMs: 30_000, owner: 'relay-a', ...o})

for (const target of matrix) {
  describe.skipIf(!target.available)(`dialect ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    const all = {inbox: true, archive: true}

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `dl${target.dialect.slice(0, 2)}`, all))
    })
    afterAll(() => closeTables(db, names))

    async function fresh(n: number, seed: Parameters<typeof seedEvents>[2] = {count: n}) {
      await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
      return seedEvents(db, names, {...seed, count: n})
    }

    it('init is idempotent: a second apply reports everything up to date', async () => {
      const again = await applyInit(db, names, all)
      expect(again.upToDate).toBe(true)
      expect(again.statements.every((s) => s.status === 'exists')).toBe(true)
      const other = uniqueTables('dlx')
      try {
        const first = await applyInit(db, other, {inbox: false, archive: false})
        expect(first.upToDate).toBe(false)
        expect(first.statements.filter((s) => s.kind === 'table').map((s) => s.name)).toEqual([other.outbox])
      } finally {
        await dropTables(db, other)
      }
    })

    // a deploy starts several replicas, each running init --apply: one creates, the rest find it
    // done (separate processes: SQLite's driver blocks its own process while it waits for a lock)
    it('init --apply run by four processes at once creates each object once, and every run succeeds', async () => {
      const other = uniqueTables('dlp')
      const tables = ['--table', other.outbox, '--inbox-table', other.inbox, '--archive-table', other.archive]
      try {
        const runs = await Promise.all(Array.from({length: 4}, () => cliAsync(['init', '--url', target.url, '--apply', '--json', ...tables]).done))
        expect(runs.map((r) => r.status), runs.map((r) => r.stderr).join('\n')).toEqual([0, 0, 0, 0])
        const created = runs.flatMap((r) => (JSON.parse(r.stdout).statements as {kind: string; name: string; status: string}[]).filter((s) => s.status === 'created').map((s) => `${s.kind}:${s.name}`))
        expect(created.sort()).toEqual(initPlan(db.dialect, other, all).map((s) => `${s.kind}:${s.name}`).sort())
      } finally {
        await dropTables(db, other)
      }
    })

    it('init --apply refuses a table by that name made by something else, by name, and creates nothing', async () => {
      const other = uniqueTables('dls')
      const t = raw(db.dialect.render.table(other, 'outbox'))
      await db.execute(sql`CREATE TABLE ${t} (id VARCHAR(36) PRIMARY KEY, foo TEXT)`)
      try {
        await expect(applyInit(db, other, all)).rejects.toThrow(new RegExp(`the outbox table ${other.outbox} exists but has no event_type, aggregate_type, .*failed_at columns: it was not made by outbox init`))
        const objects = await db.query<{name: string}>(db.dialect.ddl.existingObjects(other))
        expect(objects.map((o) => String(o.name)).filter((n) => n !== other.outbox && !/pkey|autoindex|PRIMARY/i.test(n))).toEqual([])
      } finally {
        await dropTables(db, other)
      }
    })

    it('init --apply puts back an index dropped from an existing table', async () => {
      const other = uniqueTables('dli')
      try {
        await applyInit(db, other, {inbox: false, archive: false})
        const claimIndex = target.dialect === 'mysql' ? `${other.outbox}_claim_idx` : `${other.outbox}_pending_idx`
        await db.execute(target.dialect === 'mysql' ? sql`DROP INDEX ${raw(db.dialect.render.quoteIdent(claimIndex))} ON ${raw(db.dialect.render.table(other, 'outbox'))}` : sql`DROP INDEX ${raw(db.dialect.render.quoteIdent(claimIndex))}`)
        const repaired = await applyInit(db, other, {inbox: false, archive: false})
        expect(repaired.upToDate).toBe(false)
        expect(repaired.statements.filter((s) => s.status === 'created').map((s) => s.name)).toEqual([claimIndex])
        expect((await applyInit(db, other, {inbox: false, archive: false})).upToDate).toBe(true)
      } finally {
        await dropTables(db, other)
      }
    })

    it('claims at most batch rows, oldest first, with a live lease on the database clock', async () => {
      const ids = await fresh(5)
      const first = await claimBatch(db, names, opts())
      expect(first.map((e) => e.id)).toEqual(ids.slice(0, 2))
      expect(first.every((e) => e.attempts === 1 && e.eventType === 'order.created')).toBe(true)
      expect(JSON.parse(first[0].payload)).toEqual({n: 0})
      const second = await claimBatch(db, names, opts({owner: 'relay-b'}))
      expect(second.map((e) => e.id)).toEqual(ids.slice(2, 4))
      expect((await claimBatch(db, names, opts({batch: 10}))).map((e) => e.id)).toEqual([ids[4]])
      expect(await claimBatch(db, names, opts({batch: 10}))).toEqual([])
    })

    it('a lapsed lease is taken over; the late mark is harmless', async () => {
      const ids = await fresh(2)
      await claimBatch(db, names, opts({leaseMs: 1, owner: 'slow'}))
      await sleep(30)
      const taken = await claimBatch(db, names, opts({owner: 'fast'}))
      expect(taken.map((e) => e.id)).toEqual(ids)
      expect(taken.every((e) => e.attempts === 2)).toBe(true)
      expect(await markPublished(db, names, ids)).toBe(2)
      expect(await markPublished(db, names, ids)).toBe(0) // the slow relay's late mark
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(2)
    })

    // The slow relay's broker did take the event after the new owner had given up on it for
    // good: its late mark must not leave the row both published and failed (archive, which
    // takes published and not failed rows, would never move it)
    it('a late mark of an event another relay failed meanwhile leaves it published, not failed', async () => {
      const [id] = await fresh(1)
      await claimBatch(db, names, opts({leaseMs: 1, owner: 'slow'}))
      await sleep(30)
      await claimBatch(db, names, opts({owner: 'fast'}))
      expect(await retryEvent(db, names, {id, owner: 'fast', delayMs: 0, error: 'HTTP 422', maxAttempts: 0})).toBe(true)
      expect(await count(db, names, 'failed_at IS NOT NULL')).toBe(1)
      expect(await markPublished(db, names, [id])).toBe(1)
      expect(await count(db, names, 'published_at IS NOT NULL AND failed_at IS NULL')).toBe(1)
    })

    it('published events are never claimed again', async () => {
      const ids = await fresh(3)
      const claimed = await claimBatch(db, names, opts({batch: 3}))
      await markPublished(db, names, [claimed[0].id])
      await releaseLeases(db, names, ids.slice(1), 'relay-a')
      const again = await claimBatch(db, names, opts({batch: 3}))
      expect(again.map((e) => e.id)).toEqual(ids.slice(1))
    })

    it('retry backs off by lease_until and fails after exactly max attempts', async () => {
      const [id] = await fresh(1)
      for (let attempt = 1; attempt <= 3; attempt++) {
        const [event] = await claimBatch(db, names, opts())
        expect(event.attempts).toBe(attempt)
        expect(await retryEvent(db, names, {id, owner: 'relay-a', delayMs: 0, error: `boom ${attempt}`, maxAttempts: 3})).toBe(true)
        await sleep(5)
      }
      expect(await claimBatch(db, names, opts())).toEqual([])
      const rows = await db.query<{attempts: number; last_error: string; failed_at: unknown}>(
        sql`SELECT attempts, last_error, failed_at FROM ${raw(db.dialect.render.table(names, 'outbox'))}`,
      )
      expect(rows[0]).toMatchObject({attempts: 3, last_error: 'boom 3'})
      expect(rows[0].failed_at).not.toBeNull()
    })

    it('a retry with future backoff is not claimable yet; a lost lease cannot record a retry', async () => {
      const [id] = await fresh(1)
      await claimBatch(db, names, opts())
      expect(await retryEvent(db, names, {id, owner: 'someone-else', delayMs: 0, error: 'x', maxAttempts: 10})).toBe(false)
      expect(await retryEvent(db, names, {id, owner: 'relay-a', delayMs: 60_000, error: 'x', maxAttempts: 10})).toBe(true)
      expect(await claimBatch(db, names, opts())).toEqual([])
    })

    it('release gives leases back without counting an attempt', async () => {
      const ids = await fresh(2)
      await claimBatch(db, names, opts())
      expect(await releaseLeases(db, names, ids, 'other-owner')).toBe(0)
      expect(await releaseLeases(db, names, ids, 'relay-a')).toBe(2)
      const again = await claimBatch(db, names, opts({owner: 'relay-b'}))
      expect(again.map((e) => [e.id, e.attempts])).toEqual(ids.map((id) => [id, 1]))
    })

    it('per-aggregate ordering never claims past an older unpublished event of the aggregate', async () => {
      const ids = await fresh(4, {count: 4, aggregateId: (i) => (i < 3 ? 'order-1' : 'order-2')})
      const first = await claimBatch(db, names, opts({batch: 10, ordering: 'aggregate'}))
      expect(first.map((e) => e.id)).toEqual([ids[0], ids[3]])
      await retryEvent(db, names, {id: ids[0], owner: 'relay-a', delayMs: 0, error: 'retry', maxAttempts: 10})
      await sleep(5)
      // the retried event comes back first; its successors still wait
      expect((await claimBatch(db, names, opts({batch: 10, ordering: 'aggregate'}))).map((e) => e.id)).toEqual([ids[0]])
      await markPublished(db, names, [ids[0]])
      expect((await claimBatch(db, names, opts({batch: 10, ordering: 'aggregate'}))).map((e) => e.id)).toEqual([ids[1]])
    })

    it('the printed claim script runs as-is and claims the oldest rows', async () => {
      const ids = await fresh(3)
      const script = db.dialect.relay.claimScript(names, opts({owner: "o'brien"}))
      await runScript(target.url, db, script)
      const rows = await db.query<{id: string; lease_owner: string}>(
        sql`SELECT id, lease_owner FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE lease_owner IS NOT NULL ORDER BY created_at`,
      )
      expect(rows.map((r) => r.id)).toEqual(ids.slice(0, 2))
      expect(rows[0].lease_owner).toBe("o'brien")
    })

    it("the printed DDL runs unchanged in the database's own client, twice", async () => {
      const client = nativeClient(target.dialect, target.url)
      if (!client) return
      const other = uniqueTables('dlcli')
      const script = renderInitScript(db.dialect, initPlan(db.dialect, other, all))
      try {
        for (let i = 0; i < 2; i++) {
          const result = spawnSync(client.cmd, client.args, {input: script, encoding: 'utf8'})
          expect(result.stderr.replace(/NOTICE:.*\n/g, '')).toBe('')
          expect(result.status).toBe(0)
        }
      } finally {
        await dropTables(db, other)
      }
    })
  })
}

/** psql / mariadb / sqlite3 when installed; the matrix runs the DDL through them too. */
function nativeClient(dialect: string, url: string): {cmd: string; args: string[]} | undefined {
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0
  if (dialect === 'postgres' && has('psql')) return {cmd: 'psql', args: ['-X', '-q', '-v', 'ON_ERROR_STOP=1', url]}
  if (dialect === 'mysql' && has('mariadb')) {
    const u = new URL(url)
    return {cmd: 'mariadb', args: ['-h', u.hostname, '-P', u.port || '3306', '-u', u.username || 'root', u.pathname.slice(1)]}
  }
  if (dialect === 'sqlite' && has('sqlite3')) return {cmd: 'sqlite3', args: [url.replace(/^sqlite:/, '')]}
  return undefined
}

async function runScript(url: string, db: Db, script: string) {
  if (db.dialect.name !== 'mysql') {
    await db.query(sql`${raw(script.replace(/;\s*$/, ''))}`)
    return
  }
  const mysql2 = (await import('mysql2/promise')).default
  const u = new URL(url)
  const conn = await mysql2.createConnection({host: u.hostname, port: Number(u.port || 3306), user: u.username, database: u.pathname.slice(1), multipleStatements: true})
  try {
    await conn.query(script)
  } finally {
    await conn.end()
  }
}
