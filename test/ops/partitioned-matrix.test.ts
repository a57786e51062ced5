// The rest of the command matrix on a partitioned outbox (init --partition-by day), on both
// servers; test/ops/partitions*.test.ts hold init, partitions (--ensure), status, failed,
// failed show, replay --ids, archive, verify, relay --once and chaos --url --partition-by.
// Here: writeEvent (today's partition, and past the last range into the catch-all) and the
// consumer's inbox; `outbox sql claim` and `sql mark-published` run as printed in the
// server's own client; replay --since and --failed over several partitions; status's gauge
// and the running relay's warning ahead of the last range: one line, however many polls.
import {spawnSync} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {Consumer} from '../../src/consumer.js'
import type {Db} from '../../src/db/index.js'
import {writeEvent} from '../../src/producer.js'
import {PartitionWatch} from '../../src/relay/partition-watch.js'
import {ensurePartitions} from '../../src/ops/partitions-ensure.js'
import {cli, cliAsync} from '../helpers/cli.js'
import {count} from '../helpers/events.js'
import {promtoolAvailable, promtoolCheck} from '../helpers/promtool.js'
import {sleep, until} from '../helpers/publishers.js'
import {insertRows} from '../helpers/rows.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {dropTables, targets} from '../helpers/targets.js'

const DAY = 86_400
const matrix = await targets(['postgres', 'mysql'])

/** the server's own client (psql, mariadb), as a user runs what `outbox sql` prints */
function nativeClient(dialect: string, url: string): {cmd: string; args: string[]} {
  if (dialect === 'postgres') return {cmd: 'psql', args: ['-X', '-q', '-v', 'ON_ERROR_STOP=1', url]}
  const u = new URL(url)
  return {cmd: 'mariadb', args: ['-h', u.hostname, '-P', u.port || '3306', '-u', u.username || 'root', u.pathname.slice(1)]}
}
const hasClient = (dialect: string) => spawnSync('sh', ['-c', `command -v ${dialect === 'postgres' ? 'psql' : 'mariadb'}`]).status === 0

for (const target of matrix) {
  // each test runs the CLI two to five times: minutes on a loaded machine, not the default minute
  describe.skipIf(!target.available)(`the command matrix on a partitioned outbox, ${target.dialect}`, {timeout: 300_000}, () => {
    let db: Db
    let names: TableNames
    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, 'pm', {inbox: true, archive: true, partitionBy: 'day'}))
    })
    afterAll(() => closeTables(db, names))
    const flags = (n: TableNames = names) => ['--url', target.url, '--table', n.outbox, '--inbox-table', n.inbox, '--archive-table', n.archive]
    const table = () => raw(db.dialect.render.table(names, 'outbox'))
    const now = async () => db.dialect.render.parseTime((await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`))[0].now) as Date
    const relayOnce = () => {
      const r = cli(['relay', ...flags(), '--publisher', 'stdout', '--once', '--quiet'])
      expect(r.status, r.stderr).toBe(0)
      return r.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as {id: string; aggregateId: string})
    }
    const partitionRows = () => {
      const r = cli(['partitions', ...flags(), '--json'])
      expect(r.status, r.stderr).toBe(0)
      return (JSON.parse(r.stdout) as {partitions: {name: string; rows: number; catchAll: boolean}[]}).partitions
    }

    it("writeEvent lands in today's partition inside the app's transaction; the relay sends it; the consumer's inbox takes it once", async () => {
      const kysely = await db.kysely()
      const id = await kysely.transaction().execute((trx) => writeEvent(trx, {eventType: 'order.created', aggregateId: 'order-w', payload: {n: 1}}, {tables: names}))
      const holding = partitionRows().filter((p) => p.rows > 0)
      expect(holding).toHaveLength(1)
      expect(holding[0].catchAll).toBe(false)
      const sent = relayOnce()
      expect(sent.map((e) => e.id)).toEqual([id])

      const consumer = new Consumer(db, {consumer: 'pm-consumer', tables: names})
      let effects = 0
      const event = {id, aggregateId: 'order-w'}
      expect(await consumer.handle(event, async () => void effects++)).toBe('applied')
      expect(await consumer.handle(event, async () => void effects++)).toBe('duplicate')
      expect(effects).toBe(1)
      await db.execute(sql`DELETE FROM ${table()}`)
    })

    it('an event past the last range goes to the catch-all and is relayed like any other', async () => {
      const at = await now()
      const [id] = await insertRows(db, names, at, [{created: 40 * DAY}])
      expect(partitionRows().find((p) => p.catchAll)!.rows).toBe(1)
      expect(relayOnce().map((e) => e.id)).toEqual([id])
      await db.execute(sql`DELETE FROM ${table()}`)
    })

    it.skipIf(!hasClient(target.dialect))("sql claim and sql mark-published, as printed, run in the server's own client on the partitioned table", async () => {
      const at = await now()
      const ids = await insertRows(db, names, at, [{created: -DAY - 60}, {created: -30}, {created: 2 * DAY}])
      const client = nativeClient(target.dialect, target.url)
      const claim = cli(['sql', 'claim', '--dialect', target.dialect, '--table', names.outbox, '--batch', '2', '--owner', 'psql-relay'])
      expect(claim.status, claim.stderr).toBe(0)
      const ran = spawnSync(client.cmd, client.args, {input: claim.stdout, encoding: 'utf8'})
      expect(ran.status, ran.stderr).toBe(0)
      const leased = await db.query<{id: string}>(sql`SELECT id FROM ${table()} WHERE lease_owner = 'psql-relay' ORDER BY created_at`)
      expect(leased.map((r) => String(r.id))).toEqual(ids.slice(0, 2))

      const mark = cli(['sql', 'mark-published', '--dialect', target.dialect, '--table', names.outbox, '--ids', ids.slice(0, 2).join(',')])
      expect(mark.status, mark.stderr).toBe(0)
      const marked = spawnSync(client.cmd, client.args, {input: mark.stdout, encoding: 'utf8'})
      expect(marked.status, marked.stderr).toBe(0)
      expect(await count(db, names, 'published_at IS NOT NULL')).toBe(2)
      expect(relayOnce().map((e) => e.id)).toEqual([ids[2]])
      await db.execute(sql`DELETE FROM ${table()}`)
    })

    it('replay --since takes the published events of several partitions back; replay --failed the failed ones', async () => {
      const at = await now()
      const published = await insertRows(db, names, at, [
        {created: -3 * DAY, published: -3 * DAY + 1},
        {created: -DAY - 60, published: -DAY},
        {created: -120, published: -60},
      ])
      const failed = await insertRows(db, names, at, [
        {created: -2 * DAY, failed: -2 * DAY + 5, attempts: 10, lastError: 'boom', type: 'order.failed'},
        {created: -90, failed: -30, attempts: 10, lastError: 'boom', type: 'order.failed'},
      ])
      const again = cli(['replay', ...flags(), '--failed', '--yes', '--json'])
      expect(again.status, again.stderr).toBe(0)
      expect(await count(db, names, 'failed_at IS NOT NULL')).toBe(0)
      const since = cli(['replay', ...flags(), '--since', '2d', '--yes', '--json'])
      expect(since.status, since.stderr).toBe(0)
      // two days back: yesterday's and today's published events, not the one of three days ago
      expect(await count(db, names, 'published_at IS NULL')).toBe(4)
      expect(await count(db, names, `published_at IS NOT NULL AND id = '${published[0]}'`)).toBe(1)
      const sent = relayOnce().map((e) => e.id)
      expect(sent).toEqual([failed[0], published[1], published[2], failed[1]])
      await db.execute(sql`DELETE FROM ${table()}`)
    })

    describe('the last range close: status gauge, relay warning', () => {
      let near: TableNames
      beforeAll(async () => {
        ;({names: near} = await openTables(target.url, 'pn', {inbox: false, archive: false, partitionBy: 'day'}))
        // keep today's and tomorrow's ranges only: the last one ends in at most 2 days
        const listed = JSON.parse(cli(['partitions', ...flags(near), '--json']).stdout) as {partitions: {name: string; catchAll: boolean}[]}
        for (const p of listed.partitions.filter((p) => !p.catchAll).slice(2)) {
          const partition = raw(db.dialect.render.quoteIdent(p.name))
          await db.execute(target.dialect === 'postgres' ? sql`DROP TABLE ${partition}` : sql`ALTER TABLE ${raw(db.dialect.render.table(near, 'outbox'))} DROP PARTITION ${partition}`)
        }
      })
      afterAll(() => dropTables(db, near))

      it('status --format prometheus: outbox_partition_ahead_seconds, what --json says is left', () => {
        const json = JSON.parse(cli(['status', ...flags(near), '--json']).stdout) as {partitions: {secondsLeft: number}}
        const r = cli(['status', ...flags(near), '--format', 'prometheus'])
        expect(r.status, r.stderr).toBe(0)
        const value = Number(r.stdout.match(/^outbox_partition_ahead_seconds\{table="[^"]+"\} (-?\d+)$/m)?.[1])
        expect(value).toBeGreaterThan(0)
        expect(value).toBeLessThanOrEqual(2 * DAY)
        expect(Math.abs(value - json.partitions.secondsLeft)).toBeLessThan(60)
        if (promtoolAvailable) expect(promtoolCheck(r.stdout)).toEqual({ok: true, output: ''})
      })

      it('a running relay warns once, however many polls, and serves the gauge on /metrics', async () => {
        const relay = cliAsync(['relay', ...flags(near), '--publisher', 'stdout', '--poll', '20ms', '--metrics-port', '0', '--log-format', 'json'])
        try {
          // generous: a loaded machine takes tens of seconds to start the CLI
          await until(() => relay.output().stderr.includes('"msg":"metrics"'), 90_000, 'the metrics line')
          await until(() => relay.output().stderr.includes('ends within 3 days'), 30_000, 'the warning')
          await sleep(1000) // fifty polls at least
          const line = relay.output().stderr.split('\n').find((l) => l.includes('"msg":"metrics"'))!
          const text = await (await fetch(JSON.parse(line).url)).text()
          expect(text).toMatch(/^outbox_partition_ahead_seconds\{table="[^"]+"\} \d+$/m)
        } finally {
          relay.child.kill('SIGTERM')
          await relay.done
        }
        const warnings = relay.output().stderr.split('\n').filter((l) => l.includes('ends within 3 days'))
        expect(warnings).toHaveLength(1)
        expect(JSON.parse(warnings[0])).toMatchObject({level: 'warn', secondsLeft: expect.any(Number)})
      })

      it('the check every few minutes logs again only when the state changes: near, then ahead after --ensure', async () => {
        const lines: [string, string][] = []
        const logger = {info: (m: string) => void lines.push(['info', m]), warn: (m: string) => void lines.push(['warn', m]), error: (m: string) => void lines.push(['error', m])}
        const watch = new PartitionWatch(db, near, logger)
        try {
          await watch.start(30)
          await sleep(300)
          expect(lines.map(([level]) => level)).toEqual(['warn'])
          await ensurePartitions(db, near, {aheadMs: 14 * DAY * 1000})
          await until(() => lines.length === 2, 10_000, 'the all-clear line')
          await sleep(300)
          expect(lines).toEqual([lines[0], ['info', 'partitions ahead again']])
        } finally {
          watch.stop()
        }
      })

      it('control: an unpartitioned outbox gets no gauge and no check', async () => {
        const {db: other, names: plain} = await openTables(target.url, 'pu', {inbox: false, archive: false})
        try {
          const lines: string[] = []
          const watch = new PartitionWatch(other, plain, {info: (m) => void lines.push(m), warn: (m) => void lines.push(m), error: (m) => void lines.push(m)})
          expect(await watch.check()).toBe(false)
          const r = cli(['status', ...flags(plain), '--format', 'prometheus'])
          expect(r.stdout).not.toContain('outbox_partition_ahead_seconds')
          expect(lines).toEqual([])
        } finally {
          await closeTables(other, plain)
        }
      })
    })
  })
}
