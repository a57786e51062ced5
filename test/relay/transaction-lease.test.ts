// The transaction lease (relay leaseBy 'transaction', PostgreSQL): the claim's transaction holds
// the rows while the batch is published and the mark commits it. What it must keep of the row
// lease's guarantees: every event delivered; a relay killed mid-publish frees its rows at once
// (its connection closes), one stuck idle has them taken over after the lease (the server ends
// its session), its mark then fails and the events are sent again (duplicates, never a loss);
// failures count attempts and fail at maxAttempts, an outage refunds them. Counts, not timings.
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {Relay} from '../../src/relay/relay.js'
import {cli, cliAsync} from '../helpers/cli.js'
import {count, seedEvents} from '../helpers/events.js'
import {gate, RecordingPublisher, until} from '../helpers/publishers.js'
import {PG_URL, sqliteUrl, targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const [pg] = await targets(['postgres'])

describe.skipIf(!pg.available)('transaction lease on postgres', () => {
  let db: Db
  let names: TableNames
  const table = () => raw(db.dialect.render.table(names, 'outbox'))
  const fresh = async (n: number) => {
    await db.execute(sql`DELETE FROM ${table()}`)
    return seedEvents(db, names, {count: n})
  }

  beforeAll(async () => {
    ;({db, names} = await openTables(PG_URL, 'rwtx', {inbox: false, archive: false}))
  })
  afterAll(() => closeTables(db, names))

  it('drains everything once, and the claim writes no lease: the rows are held by its transaction alone', async () => {
    const ids = await fresh(7)
    const held = gate()
    let seenWhileHeld: {leased: number; claimable: number} | undefined
    const publisher = new RecordingPublisher(async () => {
      if (!seenWhileHeld) {
        // mid-publish: no row carries a lease, yet another session's SKIP LOCKED claim gets none of the batch
        const leased = await count(db, names, 'lease_owner IS NOT NULL OR lease_until IS NOT NULL')
        const other = await db.transaction((tx) => tx.query(sql`SELECT id FROM ${table()} WHERE published_at IS NULL FOR UPDATE SKIP LOCKED`))
        seenWhileHeld = {leased, claimable: other.length}
        held.open()
      }
      await held.promise
      return {ok: true}
    })
    const relay = new Relay({db, publisher, tables: names, batch: 5, leaseBy: 'transaction', claimFrom: 'start'})
    const result = await relay.drainOnce()
    expect(seenWhileHeld).toEqual({leased: 0, claimable: 2})
    expect(result.published).toBe(7)
    expect([...publisher.counts().keys()].sort()).toEqual([...ids].sort())
    expect([...publisher.counts().values()].every((n) => n === 1)).toBe(true)
    expect(await count(db, names, 'published_at IS NOT NULL AND attempts = 0 AND lease_owner IS NULL')).toBe(7)
  })

  it('a relay killed mid-publish: its events are claimed by another relay at once, not after its lease', async () => {
    const ids = await fresh(4)
    // an HTTP endpoint that takes the request and never answers: the relay waits mid-publish
    const requests: unknown[] = []
    const server: Server = createServer((req) => void requests.push(req))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    const run = cliAsync(['relay', '--url', PG_URL, '--table', names.outbox, '--publisher', 'http', '--target', `http://127.0.0.1:${port}/`, '--lease-by', 'transaction', '--lease', '10m', '--publish-timeout', '10m', '--batch', '10', '--no-listen'])
    try {
      await until(() => requests.length > 0, 30_000, 'the killed relay to publish')
      run.child.kill('SIGKILL')
      await run.done
      // the rows were never leased: a row-lease relay with a 10 m lease could not take them for 10 m
      expect(await count(db, names, 'lease_until IS NOT NULL')).toBe(0)
      const publisher = new RecordingPublisher()
      await until(async () => ((await new Relay({db, publisher, tables: names, leaseBy: 'transaction'}).drainOnce()), publisher.sent.length === 4), 30_000, 'the killed relay\'s rows to be freed')
      expect(new Set(publisher.sent.map((e) => e.id))).toEqual(new Set(ids))
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
    } finally {
      run.child.kill('SIGKILL')
      server.closeAllConnections()
      server.close()
    }
  })

  it('a relay stuck idle in its transaction: the server frees the rows after the lease, its mark fails, nothing is lost', async () => {
    const ids = await fresh(3)
    const stuck = gate()
    const first = new RecordingPublisher(async () => (await stuck.promise, {ok: true}))
    const own = await openDb(PG_URL, {poolSize: 2})
    try {
      const relayA = new Relay({db: own, publisher: first, tables: names, leaseBy: 'transaction', leaseMs: 1000, claimFrom: 'start'})
      const drainA = relayA.drainOnce().then(
        () => 'marked',
        (error: Error) => error.message,
      )
      await until(() => first.sent.length > 0, 20_000, 'relay A to publish')
      // relay B (row leases, a different kind: the two mix) takes the rows once A's session is ended
      const second = new RecordingPublisher()
      await until(async () => ((await new Relay({db, publisher: second, tables: names, claimFrom: 'start'}).drainOnce()), second.sent.length === 3), 20_000, 'relay B to take the rows over')
      stuck.open()
      expect(await drainA).toMatch(/terminat|idle|Connection/i)
      expect(new Set(second.sent.map((e) => e.id))).toEqual(new Set(ids))
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
    } finally {
      stuck.open()
      await own.close()
    }
  })

  it('a failed publish counts its attempt, backs off, and fails the event at maxAttempts; an outage refunds it', async () => {
    const [a, b] = await fresh(2)
    const failing = new RecordingPublisher((e) => (e.id === a ? {ok: false, error: 'refused: bad payload'} : {ok: true}))
    await new Relay({db, publisher: failing, tables: names, leaseBy: 'transaction', maxAttempts: 2, backoff: {baseMs: 0, capMs: 0}}).drainOnce()
    const row = async (id: string) =>
      (await db.query<{attempts: number; failed: boolean; last_error: string | null; published: boolean}>(
        sql`SELECT attempts, failed_at IS NOT NULL AS failed, last_error, published_at IS NOT NULL AS published FROM ${table()} WHERE id = ${id}::uuid`,
      ))[0]
    expect(await row(b)).toMatchObject({attempts: 0, published: true})
    // attempt 1 retried (backoff 0: claimable again at once), attempt 2 failed
    expect(await row(a)).toMatchObject({attempts: 2, failed: true, published: false, last_error: 'refused: bad payload'})
    expect(failing.sent.filter((e) => e.id === a).map((e) => e.attempts)).toEqual([1, 2])

    const [c] = await fresh(1)
    const down = {name: 'down', publish: async () => Promise.reject(new Error('connect ECONNREFUSED')), close: async () => {}}
    await new Relay({db, publisher: down, tables: names, leaseBy: 'transaction', maxAttempts: 1}).drainOnce()
    expect(await row(c)).toMatchObject({attempts: 0, failed: false, published: false})
  })

  it('prints its statements: `outbox sql claim --lease-by transaction` runs as-is in psql', () => {
    const out = cli(['sql', 'claim', '--dialect', 'postgres', '--lease-by', 'transaction', '--carry', '0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f'])
    expect(out.status).toBe(0)
    expect(out.stdout).toMatch(/^BEGIN;\nSET LOCAL idle_in_transaction_session_timeout = 30000;\nSELECT [^;]*FOR UPDATE SKIP LOCKED;\n--[^\n]*\nUPDATE [^;]*published_at = statement_timestamp\(\)[^;]*;\nCOMMIT;\n$/)
  })
})

describe('transaction lease elsewhere', () => {
  it('is refused in one line on SQLite (its single writer would block producers) and by `outbox sql claim`', async () => {
    const db = await openDb(sqliteUrl())
    try {
      expect(() => new Relay({db, publisher: new RecordingPublisher(), leaseBy: 'transaction'})).toThrow(/PostgreSQL only/)
    } finally {
      await db.close()
    }
    const out = cli(['sql', 'claim', '--dialect', 'mysql', '--lease-by', 'transaction'])
    expect(out.status).toBe(2)
    expect(out.stderr.trim().split('\n')).toHaveLength(1)
  })
})
