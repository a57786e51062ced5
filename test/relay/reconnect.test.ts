// The relay after its database went away (a restart, a failover, no connection slot): it keeps
// trying at least every RECONNECT_WAIT_MS however many cycles failed, and delivers once the
// server is back; failures that are not about the connection still back off to 30 s.
// The outage is a TCP proxy in front of the real server taken down (every connection cut, new
// ones refused), as a restart looks to a client; the waits are read from the relay's own log
// lines (retryInMs), not timed.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {isConnectionTrouble, openDb, type Db} from '../../src/db/index.js'
import {Relay} from '../../src/relay/relay.js'
import {RECONNECT_WAIT_MS} from '../../src/relay/reconnect.js'
import {count, seedEvents} from '../helpers/events.js'
import {TcpProxy} from '../helpers/proxy.js'
import {RecordingPublisher, until} from '../helpers/publishers.js'
import {MYSQL_URL, PG_URL, targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const servers = matrix.filter((t) => t.dialect !== 'sqlite')
const POLL_MS = 20
// failures in a row before the doubled wait (POLL_MS * 2^(n-1)) would pass RECONNECT_WAIT_MS
const PAST_THE_CAP = Math.ceil(Math.log2(RECONNECT_WAIT_MS / POLL_MS)) + 2

interface Failure {
  consecutive: number
  retryInMs: number
  error: string
}

function failureLog() {
  const failures: Failure[] = []
  return {failures, info() {}, warn() {}, error: (msg: string, fields?: object) => void (msg === 'relay cycle failed' && failures.push(fields as Failure))}
}

for (const target of servers) {
  describe.skipIf(!target.available)(`reconnect on ${target.dialect}`, () => {
    let admin: Db
    let names: TableNames
    const serverUrl = target.dialect === 'postgres' ? PG_URL : MYSQL_URL

    beforeAll(async () => {
      ;({db: admin, names} = await openTables(serverUrl, `rc${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(() => closeTables(admin, names))

    it('a long outage: retries stay at the reconnect wait, and the relay delivers once the server is back', async () => {
      const server = new URL(target.url)
      const proxy = new TcpProxy(server.hostname, Number(server.port))
      await proxy.up()
      const via = new URL(target.url)
      via.port = String(proxy.port)
      const db = await openDb(via.toString(), {poolSize: 2, connectTimeoutMs: 2000})
      const logger = failureLog()
      const publisher = new RecordingPublisher()
      const relay = new Relay({db, publisher, tables: names, batch: 50, pollMs: POLL_MS, logger})
      try {
        const before = await seedEvents(admin, names, {count: 20})
        const running = relay.start()
        // sent and marked: a mark cut by the outage would leave them for a lease period
        await until(async () => before.every((id) => publisher.counts().has(id)) && (await count(admin, names, 'published_at IS NULL')) === 0, 20_000, 'deliveries before the outage')
        await proxy.down()
        await until(() => logger.failures.length >= PAST_THE_CAP, 60_000, `${PAST_THE_CAP} failed cycles in a row`)
        const during = await seedEvents(admin, names, {count: 20, base: new Date()})
        await proxy.up() // same port: the relay's next connect goes through
        await until(async () => during.every((id) => publisher.counts().has(id)) && (await count(admin, names, 'published_at IS NULL')) === 0, 30_000, 'deliveries after the outage')
        await relay.stop()
        await running
        const waits = logger.failures.map((f) => f.retryInMs)
        console.log(`[reconnect ${target.dialect}] failed cycles=${waits.length} waits=${waits.join(',')} first error: ${logger.failures[0]?.error}`)
        expect(Math.max(...logger.failures.map((f) => f.consecutive))).toBeGreaterThanOrEqual(PAST_THE_CAP)
        // doubled from the poll interval, then held at the reconnect wait (30 s before the fix)
        expect(waits.slice(0, 3)).toEqual([POLL_MS, POLL_MS * 2, POLL_MS * 4])
        expect(Math.max(...waits)).toBe(RECONNECT_WAIT_MS)
      } finally {
        await relay.stop()
        await db.close().catch(() => {})
        await proxy.down()
      }
    })

    it('a failure that is not the connection (a missing table) still backs off past the reconnect wait', async () => {
      const db = await openDb(target.url, {poolSize: 2})
      const logger = failureLog()
      const relay = new Relay({db, publisher: new RecordingPublisher(), tables: {...names, outbox: `${names.outbox}_missing`}, pollMs: POLL_MS, logger})
      try {
        const running = relay.start()
        await until(() => logger.failures.length >= PAST_THE_CAP, 60_000, `${PAST_THE_CAP} failed cycles in a row`)
        await relay.stop()
        await running
        expect(logger.failures.at(-1)!.retryInMs).toBeGreaterThan(RECONNECT_WAIT_MS)
      } finally {
        await relay.stop()
        await db.close().catch(() => {})
      }
    })

    it('a terminated session is connection trouble; a missing table is not', async () => {
      const db = await openDb(target.url, {poolSize: 1})
      try {
        const pg = target.dialect === 'postgres'
        const killed = await db
          .transaction(async (tx) => {
            const [me] = await tx.query<{id: number}>(sql`${raw(pg ? 'SELECT pg_backend_pid() AS id' : 'SELECT CONNECTION_ID() AS id')}`)
            await admin.query(sql`${raw(pg ? `SELECT pg_terminate_backend(${Number(me.id)})` : `KILL ${Number(me.id)}`)}`)
            await tx.query(sql`SELECT 1`)
          })
          .then(() => undefined, (error: unknown) => error)
        expect(killed).toBeDefined()
        expect(isConnectionTrouble(killed, db.dialect)).toBe(true)
        const missing = await db.query(sql`${raw(`SELECT 1 FROM ${names.outbox}_missing`)}`).then(() => undefined, (error: unknown) => error)
        expect(missing).toBeDefined()
        expect(isConnectionTrouble(missing, db.dialect)).toBe(false)
      } finally {
        await db.close().catch(() => {})
      }
    })
  })
}
