// The loops of one relay take turns to claim (Relay.turn, a Mutex): never two of its claims
// in flight at once, while their publishes overlap; every event still published once. Checked
// on the servers whose claims lock with SKIP LOCKED (the claims that raced each other), by a
// Db that counts the claims in flight as the relay sends them.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type Sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {Mutex} from '../../src/db/mutex.js'
import {Relay} from '../../src/relay/relay.js'
import {count, seedEvents} from '../helpers/events.js'
import {RecordingPublisher, sleep} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {wrapDb} from '../helpers/wrapped-db.js'

describe('Mutex without a wait limit, as the relay turns its claims', () => {
  it('runs claims one at a time, in the order asked, and a failed one does not stop the next', async () => {
    const turn = new Mutex(Infinity)
    const log: string[] = []
    let inFlight = 0
    let most = 0
    const claim = (name: string, ms: number, fail = false) =>
      turn.run(async () => {
        most = Math.max(most, ++inFlight)
        log.push(`start ${name}`)
        await sleep(ms)
        inFlight--
        log.push(`end ${name}`)
        if (fail) throw new Error(`${name} failed`)
        return name
      })
    const results = await Promise.allSettled([claim('a', 20), claim('b', 5, true), claim('c', 1)])
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['a', 'b failed', 'c'])
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c'])
    expect(most).toBe(1)
  })
})

/** `db` whose claims (the statements that lock with SKIP LOCKED, and the transactions holding one) are counted while in flight. */
function countingClaims(db: Db): {db: Db; most: () => number} {
  let inFlight = 0
  let most = 0
  const isClaim = (statement: Sql) => db.dialect.render.compile(statement).text.includes('SKIP LOCKED')
  const counted = async <T>(claim: boolean, run: () => Promise<T>): Promise<T> => {
    if (claim) most = Math.max(most, ++inFlight)
    try {
      return await run()
    } finally {
      if (claim) inFlight--
    }
  }
  const wrapped = wrapDb(db, {
    query: (target) => (statement, options) => counted(isClaim(statement), () => target.query(statement, options)),
    // MySQL's claim is a transaction: its locking read, then the UPDATE; counted from the read to the COMMIT
    transaction: (target) => (fn, options) => {
      let claim = false
      const done = () => (claim ? inFlight-- : undefined)
      return target
        .transaction(
          (tx, driver) =>
            fn(
              new Proxy(tx, {
                get(q, k) {
                  if (k !== 'query') return Reflect.get(q, k, q)
                  return (statement: Sql, o?: object) => {
                    if (!claim && isClaim(statement)) {
                      claim = true
                      most = Math.max(most, ++inFlight)
                    }
                    return q.query(statement, o)
                  }
                },
              }),
              driver,
            ),
          options,
        )
        .finally(done)
    },
  })
  return {db: wrapped, most: () => most}
}

const matrix = await targets(['postgres', 'mysql'])

for (const target of matrix) {
  describe.skipIf(!target.available)(`one claim in flight per relay on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `ct${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(() => closeTables(db, names))

    it('four loops: their claims take turns, their publishes overlap, every event published once', async () => {
      await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
      const ids = await seedEvents(db, names, {count: 600})
      let publishing = 0
      let mostPublishing = 0
      // a publish that takes a few ms, so the loops' batches overlap in the publisher
      const publisher = new RecordingPublisher(async () => ({ok: true}))
      const publish = publisher.publish.bind(publisher)
      publisher.publish = async (events) => {
        mostPublishing = Math.max(mostPublishing, ++publishing)
        await sleep(15)
        try {
          return await publish(events)
        } finally {
          publishing--
        }
      }
      const claims = countingClaims(db)
      const relay = new Relay({db: claims.db, tables: names, publisher, batch: 20, maxBatch: 20, concurrency: 4, pollMs: 60_000})
      const result = await relay.drainOnce()
      expect(result.published).toBe(ids.length)
      expect(new Set(publisher.sent.map((e) => e.id)).size).toBe(ids.length)
      expect(publisher.sent.length).toBe(ids.length)
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
      expect(claims.most()).toBe(1)
      expect(mostPublishing).toBeGreaterThan(1)
    })
  })
}
