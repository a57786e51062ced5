// When the low-water mark moves (PostgreSQL): on a claim's path only while the loop has been
// awake for a refresh interval (a backlog, a steady stream); otherwise when the loop goes idle,
// so a claim woken by a NOTIFY never waits for the move's two round trips.
import pgLib from 'pg'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {writeEvent} from '../../src/producer.js'
import {claimMarkFor} from '../../src/relay/claim-mark.js'
import {Relay} from '../../src/relay/relay.js'
import {RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const [pg] = await targets(['postgres'])

interface Sent {
  kind: 'move' | 'claim' | 'other'
  started: number
  ended: number
  rows: number
}

/** `db`, recording each query it runs: the mark's statements (pg_locks, then the next mark) as moves. */
function recording(db: Db, log: Sent[]): Db {
  return new Proxy(db, {
    get(target, property) {
      const value = Reflect.get(target, property)
      if (property !== 'query') return typeof value === 'function' ? value.bind(target) : value
      return async (statement: {chunks: readonly string[]}, options?: unknown) => {
        const text = statement.chunks.join('?')
        const kind = /pg_locks|least\(/.test(text) ? 'move' : /MATERIALIZED/.test(text) ? 'claim' : 'other'
        const started = performance.now()
        const rows = await target.query(statement as never, options as never)
        log.push({kind, started, ended: performance.now(), rows: rows.length})
        return rows
      }
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

  it('with LISTEN, a claim woken by a NOTIFY is not preceded by a move', async () => {
    const log: Sent[] = []
    const publisher = new RecordingPublisher()
    const relay = new Relay({db: recording(db, log), tables: names, publisher, listen: true, pollMs: 60_000})
    const running = relay.start()
    try {
      await until(() => relay.listening, 5000, 'the LISTEN connection')
      const ids: string[] = []
      for (let n = 0; n < 5; n++) {
        await sleep(150) // longer than the refresh interval: a move is due at every wake-up
        await producer.query('BEGIN')
        ids.push(await writeEvent(producer, {eventType: 'order.created', aggregateId: `order-${n}`, payload: {n}}, {tables: names}))
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
