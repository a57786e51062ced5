// When the low-water mark moves (PostgreSQL): on a claim's path only while the loop has been
// awake for a refresh interval (a backlog, a steady stream); otherwise when the loop goes idle,
// so a claim woken by a NOTIFY never waits for the move's two round trips.
import pgLib from 'pg'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {Sql, TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {writeEvent} from '../../src/producer.js'
import {claimMarkFor} from '../../src/relay/claim-mark.js'
import {Relay} from '../../src/relay/relay.js'
import {RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {wrapDb} from '../helpers/wrapped-db.js'

const [pg] = await targets(['postgres'])

interface Sent {
  kind: 'move' | 'claim' | 'other'
  started: number
  ended: number
  rows: number
}

const kindOf = (statements: Sql[]): Sent['kind'] => {
  const text = statements.map((s) => s.chunks.join('?')).join(';')
  return /pg_locks|least\(/.test(text) ? 'move' : /SKIP LOCKED/.test(text) ? 'claim' : 'other'
}

/**
 * `db`, recording what it runs: the mark's statements (pg_locks, then the next mark) as moves,
 * a row lease's claim (a query) or a transaction lease's (a held connection's script) as claims.
 */
function recording(db: Db, log: Sent[]): Db {
  const timed = async <T extends unknown[]>(statements: Sql[], run: () => Promise<T>, count: (result: T) => number) => {
    const started = performance.now()
    const result = await run()
    log.push({kind: kindOf(statements), started, ended: performance.now(), rows: count(result)})
    return result
  }
  return wrapDb(db, {
    query: (target) => (statement, options) => timed([statement], () => target.query(statement, options), (rows) => rows.length),
    hold: (target) => async () => {
      const held = await target.hold!()
      return {script: (statements: Sql[]) => timed(statements, () => held.script(statements), (results) => results.at(-1)?.rows.length ?? 0), release: (broken?: boolean) => held.release(broken)}
    },
  })
}

describe.skipIf(!pg.available)('when the claim mark moves, on postgres', () => {
  let db: Db
  let names: TableNames
  let producer: pgLib.Client
  beforeAll(async () => {
    ;({db, names} = await openTables(pg.url, 'rcpath', {inbox: false, archive: false}))
    producer = new pgLib.Client({connectionString: pg.url})
    await producer.connect()
  })
  afterAll(async () => {
    await producer?.end().catch(() => {})
    await closeTables(db, names)
  })

  it('a loop awake for less than the refresh interval takes the mark there is; an idle one moves it', async () => {
    const log: Sent[] = []
    const counted = recording(db, log)
    const moves = () => log.filter((s) => s.kind === 'move').length
    const mark = claimMarkFor(db.dialect, 'mark', {refreshMs: 50, resetMs: 600_000})!
    await mark.before(counted, names, performance.now())
    expect(moves()).toBe(2) // the walk from -infinity: always first, awake or not
    await sleep(60) // a move is due
    await mark.before(counted, names, performance.now())
    expect(moves()).toBe(2) // just woken: no move on this claim's path
    await mark.before(counted, names, performance.now() - 60)
    expect(moves()).toBe(4) // awake a refresh interval: moved on the path
    await sleep(60)
    await mark.before(counted, names) // going idle
    expect(moves()).toBe(6)
  })

  it.each(['row', 'transaction'] as const)('with LISTEN and the %s lease, a claim woken by a NOTIFY is not preceded by a move', async (leaseBy) => {
    const log: Sent[] = []
    const publisher = new RecordingPublisher()
    const relay = new Relay({db: recording(db, log), tables: names, publisher, listen: true, pollMs: 60_000, leaseBy})
    const running = relay.start()
    try {
      await until(() => relay.listening, 5000, 'the LISTEN connection')
      const ids: string[] = []
      for (let n = 0; n < 5; n++) {
        await sleep(150) // longer than the refresh interval: a move is due at every wake-up
        await producer.query('BEGIN')
        ids.push(await writeEvent(producer, {eventType: 'order.created', aggregateId: `${leaseBy}-${n}`, payload: {n}}, {tables: names}))
        await producer.query('COMMIT')
        await until(() => ids.every((id) => publisher.counts().has(id)), 5000, `event ${n}`)
      }
    } finally {
      await relay.stop()
      await running
    }
    const claims = log.filter((s) => s.kind === 'claim' && s.rows > 0)
    expect(claims.length).toBeGreaterThanOrEqual(5)
    // the mark moved while the loop was idle, not between the wake-up and the claim
    expect(log.filter((s) => s.kind === 'move').length).toBeGreaterThanOrEqual(4)
    for (const claim of claims) {
      const before = log.filter((s) => s.ended <= claim.started).at(-1)
      if (before?.kind === 'move') expect(claim.started - before.ended).toBeGreaterThan(50)
    }
  })
})
