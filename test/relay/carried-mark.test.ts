// One commit per batch: each claim carries the mark of the loop's previous batch
// (ClaimOptions.mark). On every dialect: the carried mark publishes those rows and the claim
// takes the next ones, never them (even with their lease lapsed); per-aggregate ordering sees
// them published; the relay commits once per batch, and nothing published is left unmarked
// when it drains, idles or stops.
import {spawnSync} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type ClaimOptions, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {carriedMark, claimBatch} from '../../src/relay/claim.js'
import {Relay} from '../../src/relay/relay.js'
import {cli} from '../helpers/cli.js'
import {count, seedEvents} from '../helpers/events.js'
import {gate, RecordingPublisher, sleep, until} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {wrapDb} from '../helpers/wrapped-db.js'

const matrix = await targets()
const opts = (o: Partial<ClaimOptions> = {}): ClaimOptions => ({batch: 2, leaseMs: 30_000, owner: 'relay-a', ...o})

/**
 * The Db, counting what commits: each statement run on it in autocommit and each transaction
 * (whatever runs inside one commits once). The statements themselves run on the real server.
 */
function counting(db: Db): {db: Db; commits: () => number; texts: string[]} {
  let commits = 0
  const texts: string[] = []
  const counted =
    <K extends 'query' | 'execute' | 'transaction'>(key: K) =>
    (target: Db) =>
      ((...args: unknown[]) => {
        commits++
        const first = args[0] as {chunks?: string[]}
        texts.push(first?.chunks ? first.chunks.join('?') : 'transaction')
        return (target[key] as (...a: unknown[]) => unknown).apply(target, args)
      }) as Db[K]
  const wrapped = wrapDb(db, {query: counted('query'), execute: counted('execute'), transaction: counted('transaction')})
  return {db: wrapped, commits: () => commits, texts}
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`carried mark on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    const pending = "published_at IS NULL AND failed_at IS NULL"

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `cm${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(() => closeTables(db, names))

    async function fresh(n: number, aggregateId?: (i: number) => string): Promise<string[]> {
      await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
      return seedEvents(db, names, {count: n, aggregateId})
    }

    it('the claim marks the carried batch published and takes the next rows, not those, though their lease lapsed', async () => {
      const ids = await fresh(5)
      const first = await claimBatch(db, names, opts({leaseMs: 1}))
      expect(first.map((e) => e.id)).toEqual(ids.slice(0, 2))
      await sleep(20) // the lease lapsed: the claim's own snapshot would offer these rows again
      const next = await claimBatch(db, names, opts({mark: carriedMark(first)}))
      expect(next.map((e) => e.id)).toEqual(ids.slice(2, 4))
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(2)
      const published = await db.query<{id: string}>(sql`SELECT id FROM ${raw(db.dialect.render.table(names, 'outbox'))} WHERE published_at IS NOT NULL AND lease_owner IS NULL ORDER BY created_at`)
      expect(published.map((r) => String(r.id))).toEqual(ids.slice(0, 2))
      // an empty claim still commits its mark
      const last = await claimBatch(db, names, opts({mark: carriedMark(next)}))
      expect(last.map((e) => e.id)).toEqual([ids[4]])
      expect(await claimBatch(db, names, opts({mark: carriedMark(last)}))).toEqual([])
      expect(await count(db, names, pending)).toBe(0)
    })

    it('`outbox sql claim --carry` prints a claim that runs as-is in the database\'s own client: marks those, leases the next', async () => {
      const ids = await fresh(4)
      await claimBatch(db, names, opts())
      const printed = cli(['sql', 'claim', '--dialect', target.dialect, '--table', names.outbox, '--batch', '2', '--owner', 'relay-b', '--carry', ids.slice(0, 2).join(',')])
      expect(printed.stderr).toBe('')
      expect(printed.status).toBe(0)
      expect(printed.stdout).toContain(ids[0])
      const client = nativeClient(target.dialect, target.url)
      const ran = spawnSync(client.cmd, client.args, {input: printed.stdout, encoding: 'utf8'})
      expect(ran.stderr).toBe('')
      expect(ran.status).toBe(0)
      const rows = await db.query<{id: string; published: unknown; lease_owner: string | null}>(
        sql`SELECT id, published_at AS published, lease_owner FROM ${raw(db.dialect.render.table(names, 'outbox'))} ORDER BY created_at`,
      )
      expect(rows.map((r) => [String(r.id), r.published !== null, r.lease_owner])).toEqual([
        [ids[0], true, null],
        [ids[1], true, null],
        [ids[2], false, 'relay-b'],
        [ids[3], false, 'relay-b'],
      ])
      // --params: the mark and the claim in one transaction
      const params = cli(['sql', 'claim', '--dialect', target.dialect, '--params', '--carry', ids[0]])
      expect(params.stdout).toMatch(target.dialect === 'postgres' ? /^WITH m AS \(\nUPDATE [\s\S]*SET published_at[\s\S]*id NOT IN \(SELECT id FROM m\)/ : /^(BEGIN|[\s\S]*START TRANSACTION);\nUPDATE [^;]*SET published_at[^;]*;[\s\S]*COMMIT;/)
    })

    it('per-aggregate ordering: the next event of an aggregate is claimed by the claim that marks its predecessor', async () => {
      const ids = await fresh(3, () => 'order-1')
      const first = await claimBatch(db, names, opts({batch: 10, ordering: 'aggregate'}))
      expect(first.map((e) => e.id)).toEqual([ids[0]])
      const second = await claimBatch(db, names, opts({batch: 10, ordering: 'aggregate', mark: carriedMark(first)}))
      expect(second.map((e) => e.id)).toEqual([ids[1]])
    })

    it('a relay drain commits once per batch and returns with everything marked', async () => {
      await fresh(10)
      const c = counting(db)
      const relay = new Relay({db: c.db, tables: names, publisher: new RecordingPublisher(), batch: 3, maxBatch: 3, claimFrom: 'start'})
      const result = await relay.drainOnce()
      expect(result).toMatchObject({published: 10, batches: 4})
      // 4 claims with rows, the empty one that carries the last mark; no mark of its own
      expect(c.commits(), c.texts.join('\n---\n')).toBe(5)
      expect(await count(db, names, pending)).toBe(0)
    })

    it('a running relay that goes idle has marked what it sent, before any stop', async () => {
      await fresh(7)
      const publisher = new RecordingPublisher()
      const relay = new Relay({db, tables: names, publisher, batch: 3, pollMs: 60_000})
      const running = relay.start()
      try {
        await until(async () => (await count(db, names, pending)) === 0, 20_000, 'all seven marked while the relay runs')
        expect(publisher.sent).toHaveLength(7)
      } finally {
        await relay.stop()
        await running
      }
    })

    it('stop() marks the batch in flight before it returns', async () => {
      await fresh(4)
      const held = gate()
      const publisher = new RecordingPublisher(async () => (await held.promise, {ok: true}))
      const relay = new Relay({db, tables: names, publisher, batch: 4, pollMs: 60_000})
      const running = relay.start()
      await until(() => publisher.sent.length > 0, 20_000, 'the first event handed to the publisher')
      const stopped = relay.stop()
      held.open()
      await stopped
      await running
      // the first half was sent and is marked; the second half was handed back on stop
      const sent = publisher.sent.length
      expect(sent).toBeGreaterThan(0)
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(sent)
      expect(await count(db, names, `${pending} AND lease_owner IS NULL`)).toBe(4 - sent)
    })
  })
}

/** psql / mariadb / sqlite3, as a user runs the printed SQL */
function nativeClient(dialect: string, url: string): {cmd: string; args: string[]} {
  if (dialect === 'postgres') return {cmd: 'psql', args: ['-X', '-q', '-v', 'ON_ERROR_STOP=1', url]}
  if (dialect === 'mysql') {
    const u = new URL(url)
    return {cmd: 'mariadb', args: ['-h', u.hostname, '-P', u.port || '3306', '-u', u.username || 'root', u.pathname.slice(1)]}
  }
  return {cmd: 'sqlite3', args: ['-bail', url.replace(/^sqlite:/, '')]}
}
