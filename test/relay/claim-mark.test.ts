// The claim's low-water mark (PostgreSQL): a producer that commits late is still published, rows
// made pending again below the mark (`outbox replay`) are claimed within the reset interval,
// a writer whose start the relay cannot read sends the mark back to -infinity, and one it can read
// never does, however its transactions fall between the two catalog reads.
import {randomBytes} from 'node:crypto'
import pgLib from 'pg'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {replay} from '../../src/ops/replay.js'
import {writeEvent} from '../../src/producer.js'
import {claimMarkFor} from '../../src/relay/claim-mark.js'
import {Relay, type RelayOptions} from '../../src/relay/relay.js'
import {RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {runningRelay} from '../helpers/running-relay.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const [pg, lite] = await targets(['postgres', 'sqlite'])
const NONE = '-infinity'

describe.skipIf(!pg.available)('claim from the low-water mark on postgres', () => {
  let db: Db
  let names: TableNames
  const clients: pgLib.Client[] = []
  beforeAll(async () => {
    ;({db, names} = await openTables(pg.url, 'rcmark', {inbox: false, archive: false}))
  })
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => {})
    await closeTables(db, names)
  })

  async function client(url = pg.url): Promise<pgLib.Client> {
    const c = new pgLib.Client({connectionString: url})
    await c.connect()
    clients.push(c)
    return c
  }

  /** one event in its own committed transaction, as an app writes it */
  async function produce(c: pgLib.Client, n: number): Promise<string> {
    await c.query('BEGIN')
    const id = await writeEvent(c, {eventType: 'order.created', aggregateId: `order-${n}`, payload: {n}}, {tables: names})
    await c.query('COMMIT')
    return id
  }

  async function createdAt(id: string): Promise<string> {
    const rows = await db.query<{c: string}>(sql`SELECT created_at::text AS c FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE id = ${id}::uuid`)
    return rows[0].c
  }

  /** whether every mark is at or below `at` (compared as timestamptz, to the microsecond) */
  async function allAtOrBelow(marks: string[], at: string): Promise<boolean> {
    const [row] = await db.query<{ok: boolean}>(sql`SELECT bool_and(m::timestamptz <= ${at}::timestamptz) AS ok FROM unnest(${marks}::text[]) m`)
    return row.ok
  }

  /** A running relay, and every distinct mark it claimed from, sampled every 5 ms. */
  const running = (options: Partial<RelayOptions>) => runningRelay(db, names, {listen: false, ...options})

  it('a relay starts from -infinity; claimFrom start keeps no mark', () => {
    const publisher = new RecordingPublisher()
    expect(new Relay({db, tables: names, publisher}).claimMarkValue).toBe(NONE)
    expect(new Relay({db, tables: names, publisher, claimFrom: 'start'}).claimMarkValue).toBeUndefined()
  })

  it('a producer that holds its transaction open across many mark moves is still published', async () => {
    const r = running({markResetMs: 600_000}) // no reset comes to the rescue within this test
    try {
      const producer = await client()
      const late = await client()
      for (let n = 0; n < 5; n++) {
        const id = await produce(producer, n)
        await until(() => r.published(id), 10_000, 'an early event')
      }
      await late.query('BEGIN')
      await late.query('SELECT 1') // started, nothing written yet: not a writer the bound sees
      const startedMarks = r.marks.length
      await until(() => r.marks.length >= startedMarks + 3, 10_000, 'the mark to move while the late transaction is open')
      const lateId = await writeEvent(late, {eventType: 'order.late', aggregateId: 'late', payload: {}}, {tables: names})
      const wroteAt = r.marks.length
      // later events commit and are published past it, over many poll intervals
      for (let n = 5; n < 15; n++) {
        const id = await produce(producer, n)
        await until(() => r.published(id), 10_000, 'a later event')
        await sleep(50)
      }
      // the claims went from a real mark meanwhile (held at or below the late writer's start, it may
      // not move at all after the write: comparing counts of marks before and after was a race)
      expect(r.relay.claimMarkValue).not.toBe(NONE)
      const committing = r.marks.length
      await late.query('COMMIT')
      await until(() => r.published(lateId), 10_000, 'the late event')
      // every mark while the late event was uncommitted: at or below it. (Once it is published the
      // mark may pass it; a relay moving its mark as it goes idle, right after that claim, does.)
      expect(await allAtOrBelow(r.marks.slice(wroteAt, committing), await createdAt(lateId))).toBe(true)
    } finally {
      await r.stop()
    }
  })

  it('a relay that starts while a producer holds its insert open claims from at or below it, and publishes it once committed', async () => {
    const outbox = raw(db.dialect.render.table(names, 'outbox'))
    await db.execute(sql`UPDATE ${outbox} SET published_at = now() WHERE published_at IS NULL`)
    const early = await client()
    await produce(early, 300) // pending, committed: the walk finds it
    const open = await client()
    await open.query('BEGIN')
    const late = await writeEvent(open, {eventType: 'order.late', aggregateId: 'late-start', payload: {}}, {tables: names})
    const relay = new Relay({db, tables: names, publisher: new RecordingPublisher(), pollMs: 1})
    expect((await relay.drainOnce()).published).toBe(1) // the committed one; the open one is not visible yet
    expect(relay.claimMarkValue).not.toBe(NONE)
    await open.query('COMMIT')
    expect(await allAtOrBelow([relay.claimMarkValue!], await createdAt(late))).toBe(true) // held at or below the open writer's start
    const again = await relay.drainOnce()
    expect(again.published).toBe(1)
  })

  it('outbox replay below the mark: claimed again within the reset interval, not before', async () => {
    const producer = await client()
    const check = async (markResetMs: number, waitMs: number) => {
      const r = running({markResetMs})
      try {
        const ids: string[] = []
        for (let n = 0; n < 3; n++) ids.push(await produce(producer, 100 + n))
        await until(() => ids.every((id) => r.published(id)), 10_000, 'the first delivery')
        const newest = await createdAt(ids[2])
        await until(async () => !(await allAtOrBelow([r.relay.claimMarkValue!], newest)), 10_000, 'the mark to pass the events')
        const sampled = r.marks.length
        const replayed = await replay(db, names, {ids})
        expect(replayed.replayed).toBe(3)
        await sleep(waitMs)
        const resent = ids.filter((id) => r.publisher.sent.filter((e) => e.id === id).length === 2).length
        // the mark is not monotonic: a writer whose start the relay cannot read (another role's
        // session on the shared server) sends it to -infinity for a while, and those claims find them
        let dipped = false
        for (const m of r.marks.slice(sampled - 1)) dipped ||= await allAtOrBelow([m], newest)
        return {resent, dipped}
      } finally {
        await r.stop()
      }
    }
    // the gap the reset closes: with a reset far away, the replayed rows wait below the mark
    const far = await check(600_000, 1500)
    if (!far.dipped) expect(far.resent).toBe(0)
    // reset every 1.5 s: all three are sent again within it (and a few polls)
    expect((await check(1500, 3000)).resent).toBe(3)
  })

  it('the walk from -infinity every reset interval runs beside the claims and lowers the mark to replayed rows', async () => {
    const producer = await client()
    const ids: string[] = []
    for (let n = 0; n < 3; n++) ids.push(await produce(producer, 200 + n))
    const outbox = raw(db.dialect.render.table(names, 'outbox'))
    await db.execute(sql`UPDATE ${outbox} SET published_at = now() WHERE published_at IS NULL`)
    const mark = claimMarkFor(db.dialect, 'mark', {refreshMs: 1, resetMs: 300})!
    // a start: the walk from -infinity runs before the first claim, which goes from its mark
    const first = await mark.before(db, names)
    expect(first).not.toBe(NONE)
    expect(await allAtOrBelow([first], await createdAt(ids[2]))).toBe(false) // nothing pending: the mark is now()
    await sleep(5)
    const moved = await mark.before(db, names)
    expect(await allAtOrBelow([moved], await createdAt(ids[2]))).toBe(false)
    expect((await replay(db, names, {ids})).replayed).toBe(3)
    // before the reset interval the mark only moves up: the replayed rows wait below it
    await sleep(5)
    expect(await allAtOrBelow([await mark.before(db, names)], await createdAt(ids[2]))).toBe(false)
    await sleep(300)
    // the interval is over: the claim does not wait for the walk, nor go back to -infinity
    const during = await mark.before(db, names)
    expect(mark.walk).toBeDefined()
    expect(during).not.toBe(NONE)
    await mark.walk
    expect(await allAtOrBelow([mark.current], await createdAt(ids[0]))).toBe(true)
    expect(await allAtOrBelow([await mark.before(db, names)], await createdAt(ids[0]))).toBe(true)
  })

  it('writers the relay can read, committing in a loop, never send the bound to -infinity', async () => {
    // pg_locks and pg_stat_activity are two reads: a writer between transactions in one and
    // holding the lock in the other once read as "start unknown" (2.2% of reads with 24 producers)
    const part = db.dialect.relay.claimMark!
    const writers = await Promise.all([client(), client(), client(), client()])
    let writing = true
    const loops = writers.map(async (c, w) => {
      for (let n = 0; writing; n++) await produce(c, w * 1_000_000 + n)
    })
    const bounds: string[] = []
    try {
      while (bounds.length < 1500) bounds.push((await db.query<{bound: string}>(part.writersBound(names)))[0].bound)
    } finally {
      writing = false
      await Promise.all(loops)
    }
    expect(bounds.filter((b) => b === NONE)).toEqual([])
  })

  describe('a writer whose start the relay cannot read', () => {
    const suffix = randomBytes(3).toString('hex')
    const [relayRole, writerRole] = [`rcmark_relay_${suffix}`, `rcmark_writer_${suffix}`]
    let asRelay: Db
    beforeAll(async () => {
      const outbox = db.dialect.render.table(names, 'outbox')
      // neither is a superuser nor has pg_read_all_stats: each sees the other's xact_start as NULL
      for (const role of [relayRole, writerRole]) await db.execute(sql`${raw(`CREATE ROLE ${role} LOGIN`)}`)
      await db.execute(sql`${raw(`GRANT SELECT, INSERT, UPDATE ON ${outbox} TO ${relayRole}, ${writerRole}`)}`)
      asRelay = await openDb(urlFor(relayRole))
    })
    afterAll(async () => {
      await asRelay?.close()
      for (const role of [relayRole, writerRole]) {
        await db.execute(sql`${raw(`DROP OWNED BY ${role}`)}`).catch(() => {})
        await db.execute(sql`${raw(`DROP ROLE IF EXISTS ${role}`)}`)
      }
    })

    function urlFor(user: string): string {
      const u = new URL(pg.url)
      u.username = user
      return u.toString()
    }

    it('gives -infinity (a full claim) while it holds the outbox, a real mark once it is gone', async () => {
      const part = db.dialect.relay.claimMark!
      const bound = async (on: Db) => (await on.query<{bound: string}>(part.writersBound(names)))[0].bound
      const writer = await client(urlFor(writerRole))
      await writer.query('BEGIN')
      await writer.query(`INSERT INTO ${db.dialect.render.table(names, 'outbox')} (id, event_type, aggregate_id, payload) VALUES (gen_random_uuid(), 'hidden', 'h', '{}')`)
      const [{start}] = await db.query<{start: string}>(sql`SELECT xact_start::text AS start FROM pg_stat_activity WHERE usename = ${writerRole}`)
      // the control: a superuser reads the writer's start and is bound by it
      expect(await allAtOrBelow([await bound(db)], start)).toBe(true)
      expect(await bound(db)).not.toBe(NONE)
      expect(await bound(asRelay)).toBe(NONE)
      // the relay's own mark follows: -infinity while the writer is open, a real mark after
      const relay = new Relay({db: asRelay, tables: names, publisher: new RecordingPublisher(), pollMs: 1})
      await relay.drainOnce()
      expect(relay.claimMarkValue).toBe(NONE)
      await writer.query('COMMIT')
      await sleep(5)
      await relay.drainOnce()
      expect(relay.claimMarkValue).not.toBe(NONE)
    })
  })
})

describe.skipIf(!lite.available)('claim from the mark where the dialect has none', () => {
  it("claimFrom 'mark' is refused on SQLite; the default claims from the start", async () => {
    const {db, names} = await openTables(lite.url, 'rcmark', {inbox: false, archive: false})
    try {
      const publisher = new RecordingPublisher()
      expect(() => new Relay({db, tables: names, publisher, claimFrom: 'mark'})).toThrow("claimFrom 'mark' is not available on SQLite")
      expect(new Relay({db, tables: names, publisher}).claimMarkValue).toBeUndefined()
    } finally {
      await closeTables(db, names)
    }
  })
})
