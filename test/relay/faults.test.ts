// Faults the relay must survive on real servers: its connections killed mid-run, a skewed
// process clock, and 8 relays racing producers. Figures are counts, never timings.
import {afterAll, beforeAll, describe, expect, it, vi} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {writeEvent} from '../../src/producer.js'
import {claimBatch} from '../../src/relay/claim.js'
import {Relay} from '../../src/relay/relay.js'
import type {ClaimedEvent} from '../../src/relay/claim.js'
import {count, seedEvents} from '../helpers/events.js'
import {RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {dedicatedLogin} from '../helpers/logins.js'
import {MYSQL_URL, PG_URL, targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const servers = matrix.filter((t) => t.dialect !== 'sqlite')

/** A logger that counts what the relay reported, so "logs once, backs off" is checkable. */
function countingLogger() {
  const errors: string[] = []
  return {errors, info() {}, warn() {}, error: (msg: string, fields?: object) => void errors.push(`${msg} ${JSON.stringify(fields ?? {})}`)}
}

for (const target of servers) {
  describe.skipIf(!target.available)(`faults on ${target.dialect}`, () => {
    let admin: Db
    let names: TableNames

    beforeAll(async () => {
      ;({db: admin, names} = await openTables(target.dialect === 'postgres' ? PG_URL : MYSQL_URL, `fa${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(() => closeTables(admin, names))

    it('the relay survives its connections being killed mid-run and delivers everything', async () => {
      await admin.execute(sql`DELETE FROM ${raw(admin.dialect.render.table(names, 'outbox'))}`)
      const login = await dedicatedLogin(admin, target.url)
      const db = await openDb(login.url, {poolSize: 2})
      const logger = countingLogger()
      const publisher = new RecordingPublisher()
      const relay = new Relay({db, publisher, tables: names, batch: 20, leaseMs: 2000, pollMs: 20, logger})
      try {
        const ids = await seedEvents(admin, names, {count: 200})
        const running = relay.start()
        await until(() => publisher.sent.length >= 40, 20_000, 'first deliveries')
        // several kills, so some land on a connection in the middle of a statement
        let killed = 0
        for (let k = 0; k < 5; k++) {
          killed += await login.kill()
          await sleep(30)
        }
        expect(killed).toBeGreaterThan(0)
        await seedEvents(admin, names, {count: 100, base: new Date()}).then((more) => ids.push(...more))
        await until(async () => (await count(admin, names, 'published_at IS NULL')) === 0, 30_000, 'drain after the kill')
        await relay.stop()
        await running
        const delivered = publisher.counts()
        expect(ids.every((id) => delivered.has(id))).toBe(true)
        // it recovered without a storm of errors (a kill of an idle connection logs nothing)
        console.log(`[kill ${target.dialect}] connections killed=${killed} relay errors logged=${logger.errors.length}`)
        expect(logger.errors.length).toBeLessThan(20)
      } finally {
        await relay.stop()
        await db.close().catch(() => {})
        await login.drop()
      }
    })

    it('8 relays and 2 producers at full speed: no lost event, no double claim within a live lease, no surfaced deadlock', async () => {
      await admin.execute(sql`DELETE FROM ${raw(admin.dialect.render.table(names, 'outbox'))}`)
      const deliveries = new Map<string, {owner: string; at: number}[]>()
      const logger = countingLogger()
      const relays: Relay[] = []
      const dbs: Db[] = []
      for (let i = 0; i < 8; i++) {
        const db = await openDb(target.url, {poolSize: 2})
        dbs.push(db)
        const owner = `load-${i}`
        const publisher = new RecordingPublisher((e: ClaimedEvent) => {
          const list = deliveries.get(e.id) ?? []
          list.push({owner, at: Date.now()})
          deliveries.set(e.id, list)
          return {ok: true}
        })
        relays.push(new Relay({db, publisher, tables: names, batch: 50, leaseMs: 30_000, pollMs: 10, owner, logger}))
      }
      const produced: string[] = []
      const producerDb = await openDb(target.url, {poolSize: 2})
      dbs.push(producerDb)
      let producing = true
      const producer = async () => {
        while (producing) {
          await producerDb.transaction(async (tx) => {
            for (let k = 0; k < 10; k++) {
              const id = await writeEventVia(tx, producerDb, names, produced.length)
              produced.push(id)
            }
          })
        }
      }
      try {
        const running = relays.map((r) => r.start())
        const producers = [producer(), producer()]
        await sleep(6000) // bounded load window
        producing = false
        await Promise.all(producers)
        await until(async () => (await count(admin, names, 'published_at IS NULL')) === 0, 60_000, 'drain')
        await Promise.all(relays.map((r) => r.stop()))
        await Promise.all(running)
        const lost = produced.filter((id) => !deliveries.has(id))
        const doubleWithinLease = [...deliveries.values()].filter((d) => d.length > 1 && d[1].at - d[0].at < 30_000)
        console.log(`[load ${target.dialect}] events=${produced.length} delivered=${deliveries.size} lost=${lost.length} duplicates-within-lease=${doubleWithinLease.length} relay-errors=${logger.errors.length}`)
        expect(produced.length).toBeGreaterThan(100)
        expect(lost).toEqual([])
        expect(doubleWithinLease).toEqual([])
        expect(logger.errors.filter((e) => /deadlock|1213|40P01/i.test(e))).toEqual([])
        expect(logger.errors).toEqual([])
      } finally {
        producing = false
        await Promise.all(relays.map((r) => r.stop()))
        for (const db of dbs) await db.close().catch(() => {})
      }
    })
  })
}

/** The producer through our own Db transaction (the SQL is the dialect's insertEvent). */
async function writeEventVia(tx: {execute: Db['execute']}, db: Db, names: TableNames, n: number): Promise<string> {
  const {uuidv7} = await import('../../src/core/uuid.js')
  const id = uuidv7()
  await tx.execute(
    db.dialect.events.insertEvent(names, {id, eventType: 'load.test', aggregateType: null, aggregateId: `agg-${n % 50}`, aggregateVersion: null, payload: JSON.stringify({n}), headers: null}),
  )
  return id
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`leases use the database clock on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `ck${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(async () => {
      vi.useRealTimers()
      await closeTables(db, names)
    })

    it('a relay whose process clock runs hours ahead or behind cannot take a live lease, and still takes a lapsed one', async () => {
      const ids = await seedEvents(db, names, {count: 4})
      const first = await claimBatch(db, names, {batch: 2, leaseMs: 30_000, owner: 'honest'})
      expect(first.map((e) => e.id)).toEqual(ids.slice(0, 2))
      for (const skewHours of [+6, -6, +24 * 365]) {
        vi.useFakeTimers({toFake: ['Date']})
        vi.setSystemTime(Date.now() + skewHours * 3_600_000)
        const skewed = await claimBatch(db, names, {batch: 10, leaseMs: 30_000, owner: `skewed${skewHours}`})
        vi.useRealTimers()
        // only the two never-claimed events, never the honest relay's live leases
        expect(skewed.map((e) => e.id).filter((id) => first.some((f) => f.id === id))).toEqual([])
        await db.execute(sql`UPDATE ${raw(db.dialect.render.table(names, 'outbox'))} SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ${`skewed${skewHours}`}`)
      }
      // a lapsed lease, by the database clock, is taken over even by a skewed process
      await db.execute(sql`UPDATE ${raw(db.dialect.render.table(names, 'outbox'))} SET lease_until = ${db.dialect.render.timeParam(new Date(Date.now() - 60_000))} WHERE lease_owner = 'honest'`)
      vi.useFakeTimers({toFake: ['Date']})
      vi.setSystemTime(Date.now() - 6 * 3_600_000)
      const taken = await claimBatch(db, names, {batch: 10, leaseMs: 30_000, owner: 'skewed-late'})
      vi.useRealTimers()
      expect(taken.map((e) => e.id).sort()).toEqual(ids.slice(0, 4).sort())
    })
  })
}

describe.skipIf(!matrix.find((t) => t.dialect === 'postgres')?.available)('relay connections commit asynchronously, others do not', () => {
  it('asyncCommit sets synchronous_commit = off on those connections only', async () => {
    for (const [asyncCommit, expected] of [[true, 'off'], [false, 'on']] as const) {
      const db = await openDb(PG_URL, {asyncCommit})
      try {
        expect((await db.query<{synchronous_commit: string}>(sql`SHOW synchronous_commit`))[0].synchronous_commit).toBe(expected)
      } finally {
        await db.close()
      }
    }
  })
})
