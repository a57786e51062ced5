// The claim's low-water mark on MariaDB/MySQL (opt-in, bounded by a time margin): a producer whose
// INSERT stays open longer than the margin is published by the walk from the start within
// markResetMs, once; one shorter than the margin without waiting for it; under a held read view
// the claim from the mark reads a few InnoDB pages where the claim from the start reads thousands;
// a replay below the mark is found by the walk; the margin is refused where it means nothing.
import {spawnSync} from 'node:child_process'
import type {Connection} from 'mysql2/promise'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {replay} from '../../src/ops/replay.js'
import {writeEvent} from '../../src/producer.js'
import {claimMarkFor} from '../../src/relay/claim-mark.js'
import {Relay, type RelayOptions} from '../../src/relay/relay.js'
import {RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {runningRelay} from '../helpers/running-relay.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const [my, lite] = await targets(['mysql', 'sqlite'])
const NONE = '1000-01-01 00:00:00.000000'

describe.skipIf(!my.available)('claim from the margin-bounded mark on mysql', () => {
  let db: Db
  let names: TableNames
  const connections: Connection[] = []
  beforeAll(async () => {
    ;({db, names} = await openTables(my.url, 'rcmm', {inbox: false, archive: false}))
  })
  afterAll(async () => {
    for (const c of connections) await c.end().catch(() => {})
    await closeTables(db, names)
  })

  async function connection(): Promise<Connection> {
    const mysql2 = (await import('mysql2/promise')).default
    const u = new URL(my.url)
    const c = await mysql2.createConnection({host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database: u.pathname.slice(1)})
    connections.push(c)
    return c
  }

  const outbox = () => raw(db.dialect.render.table(names, 'outbox'))

  async function produce(c: Connection, n: number): Promise<string> {
    await c.query('START TRANSACTION')
    const id = await writeEvent(c, {eventType: 'order.created', aggregateId: `order-${n}`, payload: {n}}, {tables: names})
    await c.query('COMMIT')
    return id
  }

  async function createdAt(id: string): Promise<string> {
    const [row] = await db.query<{c: string}>(sql`SELECT DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f') AS c FROM ${outbox()} WHERE id = ${id}`)
    return row.c
  }

  /** A running relay from the mark, and every distinct mark it claimed from. */
  const running = (options: Partial<RelayOptions>) => runningRelay(db, names, {claimFrom: 'mark', ...options})

  /** A late producer: its INSERT held open `holdMs` while others are published; ms from its COMMIT to its publish. */
  async function lateProducer(r: ReturnType<typeof running>, holdMs: number): Promise<{id: string; passed: boolean; afterCommitMs: number}> {
    const producer = await connection()
    const late = await connection()
    await late.query('START TRANSACTION')
    const id = await writeEvent(late, {eventType: 'order.late', aggregateId: 'late', payload: {}}, {tables: names})
    const wroteAt = r.marks.length
    const started = Date.now()
    for (let n = 0; Date.now() - started < holdMs; n++) {
      const other = await produce(producer, n)
      await until(() => r.sends(other) === 1, 10_000, 'an event produced meanwhile')
      await sleep(50)
    }
    const at = await createdAt(id).catch(() => undefined) // not visible yet: read after the COMMIT
    expect(at).toBeUndefined()
    await late.query('COMMIT')
    const committed = Date.now()
    await until(() => r.sends(id) === 1, 30_000, 'the late event')
    const afterCommitMs = Date.now() - committed
    const when = await createdAt(id)
    const passed = r.marks.slice(wroteAt).some((m) => m > when) // same fixed-width text: compared as text
    return {id, passed, afterCommitMs}
  }

  it('is opt-in: a relay claims from the start unless claimFrom is mark, which starts from DATETIME\'s least value', () => {
    const publisher = new RecordingPublisher()
    expect(new Relay({db, tables: names, publisher}).claimMarkValue).toBeUndefined()
    expect(new Relay({db, tables: names, publisher, claimFrom: 'mark'}).claimMarkValue).toBe(NONE)
  })

  it('an INSERT open longer than the margin falls below the mark and is published by the walk, within markResetMs, once', async () => {
    const r = running({markMarginMs: 200, markResetMs: 3000})
    try {
      const {id, passed, afterCommitMs} = await lateProducer(r, 1500)
      expect(passed).toBe(true) // the mark went past it: only the walk could find it
      // a reset interval, then the walk and a claim: bounded loosely, as the suite runs files side
      // by side; what must not happen is waiting for a later walk than the next few (or never)
      expect(afterCommitMs).toBeLessThan(3000 + 10_000)
      await sleep(500)
      expect(r.sends(id)).toBe(1)
    } finally {
      await r.stop()
    }
  })

  it('an INSERT open for less than the margin is published without the walk', async () => {
    // a margin far longer than the hold, even on a loaded machine, and no walk within the test:
    // published at all (lateProducer waits 30 s at most) means published without the walk
    const r = running({markMarginMs: 30_000, markResetMs: 600_000})
    try {
      const {id, passed} = await lateProducer(r, 1000)
      expect(passed).toBe(false)
      await sleep(300)
      expect(r.sends(id)).toBe(1)
    } finally {
      await r.stop()
    }
  })

  it('a replay below the mark waits for the walk from the start, and is found by it', async () => {
    const producer = await connection()
    const ids: string[] = []
    for (let n = 0; n < 3; n++) ids.push(await produce(producer, 100 + n))
    await db.execute(sql`UPDATE ${outbox()} SET published_at = UTC_TIMESTAMP(6) WHERE published_at IS NULL`)
    await sleep(30)
    const mark = claimMarkFor(db.dialect, 'mark', {refreshMs: 1, resetMs: 400, marginMs: 10})!
    const newest = await createdAt(ids[2])
    expect((await mark.before(db, names)) > newest).toBe(true) // nothing pending: the clock less the margin
    expect((await replay(db, names, {ids})).replayed).toBe(3)
    await sleep(5)
    expect((await mark.before(db, names)) > newest).toBe(true) // within the interval it only moves up
    await sleep(400)
    await mark.before(db, names)
    expect(mark.walk).toBeDefined()
    await mark.walk
    expect(mark.current <= (await createdAt(ids[0]))).toBe(true)
  })

  it('under a held read view, the claim from the mark reads a few pages, the claim from the start every entry published since', async () => {
    const hold = await connection()
    const c = await connection()
    const n = 5000
    // made ten minutes ago, so a mark 2 s behind the clock is past them all
    await c.query(`INSERT INTO ${names.outbox} (id, event_type, aggregate_id, payload, created_at)
SELECT UUID(), 'order.old', CONCAT('old-', seq), '{}', UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE FROM seq_1_to_${n}`)
    await hold.query('START TRANSACTION WITH CONSISTENT SNAPSHOT')
    await hold.query(`SELECT COUNT(*) FROM ${names.outbox}`)
    try {
      // published under the view: purge keeps the claim index's delete-marked entries
      await c.query(`UPDATE ${names.outbox} SET published_at = UTC_TIMESTAMP(6) WHERE published_at IS NULL`)
      for (let k = 0; k < 5; k++) await produce(c, 1000 + k)
      const part = db.dialect.relay.claimMark!
      const [{bound}] = await db.query<{bound: string}>(part.writersBound(names, 2000))
      const [{mark}] = await db.query<{mark: string}>(part.next(names, part.none, bound))
      const pages = async (from: string | undefined) => {
        const plan = db.dialect.relay.claim(names, {batch: 100, leaseMs: 30_000, owner: 'rcmm', from})
        if (plan.kind !== 'lock-then-update') throw new Error('mysql claims lock then update')
        await c.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED')
        await c.query('START TRANSACTION')
        const [[row]] = (await c.query(`ANALYZE FORMAT=JSON ${db.dialect.render.inline(plan.lock)}`)) as unknown as [Record<string, string>[]]
        await c.query('ROLLBACK')
        const q = JSON.parse(Object.values(row)[0]).query_block
        const table = q.nested_loop?.[0]?.table ?? q.table
        return {pages: Number(table.r_engine_stats?.pages_accessed), rows: Number(table.r_rows)}
      }
      const fromStart = await pages(undefined)
      const fromMark = await pages(mark)
      expect(fromStart.rows).toBe(5)
      expect(fromMark.rows).toBe(5)
      // each of the 5,000 delete-marked entries is walked and looked up in the clustered index
      // (10,028 pages here); from the mark, the seek and the 5 rows' lookups (12-36 pages)
      expect(fromStart.pages).toBeGreaterThan(n)
      expect(fromMark.pages).toBeLessThan(100)
    } finally {
      await hold.query('ROLLBACK')
    }
  })
})

describe.skipIf(!lite.available)('the mark margin where it means nothing', () => {
  it('is refused on SQLite, which has no mark', async () => {
    const {db, names} = await openTables(lite.url, 'rcmm', {inbox: false, archive: false})
    try {
      const publisher = new RecordingPublisher()
      expect(() => new Relay({db, tables: names, publisher, markMarginMs: 2000})).toThrow('markMarginMs means nothing on SQLite: it has no claim mark')
    } finally {
      await closeTables(db, names)
    }
  })
})

const BIN = new URL('../../bin/run.js', import.meta.url).pathname

describe.skipIf(!my.available)('the mark margin on mysql: checked', () => {
  it('outbox relay --mark-margin without --claim-from mark: exit 2, one line', async () => {
    const {db, names} = await openTables(my.url, 'rcmm', {inbox: false, archive: false})
    try {
      const run = spawnSync(process.execPath, [BIN, 'relay', '--url', my.url, '--table', names.outbox, '--publisher', 'stdout', '--mark-margin', '2s', '--once'], {encoding: 'utf8'})
      expect(run.status).toBe(2)
      expect(run.stderr).toBe("outbox: --mark-margin bounds the claim mark, and the claims start from the start of the index. Add --claim-from mark, or drop --mark-margin\n")
    } finally {
      await closeTables(db, names)
    }
  })

  it('needs claimFrom mark, and a whole number >= 0', async () => {
    const {db, names} = await openTables(my.url, 'rcmm', {inbox: false, archive: false})
    try {
      const publisher = new RecordingPublisher()
      expect(() => new Relay({db, tables: names, publisher, markMarginMs: 2000})).toThrow('markMarginMs bounds the claim mark, and the claims start from the start of the index')
      expect(() => new Relay({db, tables: names, publisher, claimFrom: 'mark', markMarginMs: -1})).toThrow('relay markMarginMs must be a whole number >= 0 (got -1)')
      expect(new Relay({db, tables: names, publisher, claimFrom: 'mark', markMarginMs: 0}).claimMarkValue).toBe(NONE)
    } finally {
      await closeTables(db, names)
    }
  })
})
