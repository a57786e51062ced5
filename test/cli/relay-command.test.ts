// `outbox relay` as a user runs it (a real process of the built CLI, bin/run.js: run
// `npm run build` first), against a loopback HTTP receiver: --once exit codes, logs,
// graceful SIGTERM, metrics, and a failpoint crash.
import {spawn, type ChildProcess} from 'node:child_process'
import {existsSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {broker, uniqueName} from '../helpers/brokers.js'
import {count, seedEvents} from '../helpers/events.js'
import {TcpProxy} from '../helpers/proxy.js'
import {until} from '../helpers/publishers.js'
import {PG_URL, targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const BIN = new URL('../../bin/run.js', import.meta.url).pathname
if (!existsSync(new URL('../../dist/commands/relay.js', import.meta.url))) throw new Error('dist/ has no relay command: run `npm run build` before this test')

interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

function start(args: string[], env: Record<string, string> = {}): {child: ChildProcess; done: Promise<Run>; stderr: () => string} {
  const child = spawn(process.execPath, [BIN, 'relay', ...args], {env: {...process.env, OUTBOX_FAILPOINTS: '', ...env}, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d) => (stdout += d))
  child.stderr!.on('data', (d) => (stderr += d))
  const done = new Promise<Run>((resolve) => child.on('close', (code, signal) => resolve({code, signal, stdout, stderr})))
  return {child, done, stderr: () => stderr}
}

/** A receiver that records Idempotency-Keys; answer() picks the status. */
async function receiver(answer: (id: string) => number = () => 200) {
  const ids: string[] = []
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const id = String(req.headers['idempotency-key'])
      ids.push(id)
      res.writeHead(answer(id)).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {ids, url: `http://127.0.0.1:${port}/events`, port, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())))}
}

const matrix = await targets()

for (const target of matrix) {
  describe.skipIf(!target.available)(`outbox relay on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `rc${target.dialect.slice(0, 2)}`, {inbox: false, archive: false}))
    })
    afterAll(() => closeTables(db, names))

    it('--once delivers everything and exits 0, one log line per batch, no password in the output', async () => {
      const ids = await seedEvents(db, names, {count: 12})
      const r = await receiver()
      const withPassword = r.url.replace('//', '//hook:hunter22@')
      const run = await start(['--url', target.url, '--table', names.outbox, '--publisher', 'http', '--target', withPassword, '--batch', '5', '--max-batch', '5', '--once']).done
      await r.close()
      expect(run.code, run.stderr).toBe(0)
      expect(new Set(r.ids)).toEqual(new Set(ids))
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
      expect(run.stderr.match(/ info +batch claimed=/g)).toHaveLength(3)
      expect(run.stderr + run.stdout).not.toContain('hunter22')
    })

    it('4 relay processes at once deliver every event exactly once', async () => {
      await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
      const ids = await seedEvents(db, names, {count: 400, stepMs: 10})
      const r = await receiver()
      const args = ['--url', target.url, '--table', names.outbox, '--publisher', 'http', '--target', r.url, '--batch', '10', '--once', '--quiet']
      const runs = await Promise.all([1, 2, 3, 4].map(() => start(args).done))
      await r.close()
      for (const run of runs) expect(run.code, run.stderr).toBe(0)
      expect(r.ids).toHaveLength(400)
      expect(new Set(r.ids)).toEqual(new Set(ids))
      expect(await count(db, names, 'published_at IS NULL')).toBe(0)
    })
  })
}

const sqliteTarget = matrix.find((t) => t.dialect === 'sqlite')!
describe('outbox relay (sqlite)', () => {
  let db: Db
  let names: TableNames
  beforeAll(async () => {
    ;({db, names} = await openTables(sqliteTarget.url, 'rcx', {inbox: false, archive: false}))
  })
  afterAll(() => closeTables(db, names))
  const base = () => ['--url', sqliteTarget.url, '--table', names.outbox]

  it('--once exits 1 with the counts in --json when events are left failed', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    const ids = await seedEvents(db, names, {count: 4})
    const r = await receiver((id) => (id === ids[2] ? 500 : 204))
    const run = await start([...base(), '--publisher', 'http', '--target', r.url, '--once', '--max-attempts', '1', '--json']).done
    await r.close()
    expect(run.code).toBe(1)
    const out = JSON.parse(run.stdout)
    expect(out).toMatchObject({exitCode: 1, backlog: {pending: 0, retrying: 0, failed: 1}})
    expect(out.published).toBe(3)
  })

  // better-sqlite3 is synchronous: without a turn of the event loop between batches, a relay
  // with a backlog only saw SIGTERM once the whole backlog was sent
  it('SIGTERM with a large backlog stops after the batch in flight, not after the backlog', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    const total = 100_000
    await seedEvents(db, names, {count: total, stepMs: 1})
    const relay = start([...base(), '--publisher', 'stdout', '--log-format', 'json'])
    await until(() => relay.stderr().includes('"msg":"batch"'), 30_000, 'the first batch')
    relay.child.kill('SIGTERM')
    const run = await relay.done
    expect(run.code, run.stderr).toBe(0)
    const published = await count(db, names, 'published_at IS NOT NULL')
    expect(published).toBeGreaterThan(0)
    expect(published).toBeLessThan(total)
    // the batch in flight settled; nothing is left leased
    expect(await count(db, names, 'published_at IS NULL AND lease_owner IS NOT NULL')).toBe(0)
  })

  it('--once stops on SIGTERM after the batch in flight too, hands back the rest and exits 143', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    const total = 100_000
    await seedEvents(db, names, {count: total, stepMs: 1})
    const relay = start([...base(), '--publisher', 'stdout', '--log-format', 'json', '--once'])
    await until(() => relay.stderr().includes('"msg":"batch"'), 30_000, 'the first batch')
    relay.child.kill('SIGTERM')
    const run = await relay.done
    expect(run.code, run.stderr).toBe(143)
    expect(run.stderr).toContain('SIGTERM: stopping after the batch in flight')
    expect(run.stderr).toMatch(/^outbox: stopped by a signal after the batch in flight; \d+ event\(s\) still pending/m)
    expect(await count(db, names, 'published_at IS NOT NULL')).toBeLessThan(total)
    expect(await count(db, names, 'published_at IS NULL AND lease_owner IS NOT NULL')).toBe(0)
  })

  it('--timeout stops --once as SIGTERM does, but exits 2, as documented', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    await seedEvents(db, names, {count: 100})
    const slow = createServer((req, res) => {
      req.resume()
      req.on('end', () => setTimeout(() => res.writeHead(200).end(), 200))
    })
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/events`
    const run = await start([...base(), '--publisher', 'http', '--target', url, '--batch', '1', '--once', '--timeout', '4s']).done
    await new Promise<void>((resolve) => (slow.closeAllConnections(), slow.close(() => resolve())))
    expect(run.code, run.stderr).toBe(2)
    expect(run.stderr).toMatch(/^outbox: timed out after 4s/m)
    // stopped the graceful way, mid-drain (not before the relay began)
    expect(run.stderr).toContain('SIGTERM: stopping after the batch in flight')
    expect(await count(db, names, 'published_at IS NULL AND lease_owner IS NOT NULL')).toBe(0)
  })

  it('--once exits 1 when events are left retrying (in backoff)', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    const ids = await seedEvents(db, names, {count: 3})
    const r = await receiver((id) => (id === ids[0] ? 503 : 200))
    const run = await start([...base(), '--publisher', 'http', '--target', r.url, '--once', '--backoff', '1m..1m']).done
    await r.close()
    expect(run.code).toBe(1)
    expect(verdict(run)).toMatch(/^outbox: 1 event\(s\) still pending: publishing failed \(HTTP 503.*\); they are retried after a backoff\. See: outbox status$/)
    // the batch line says why, not only how many
    expect(run.stderr).toMatch(/ info +batch claimed=3 published=2 retried=1 .*error="?HTTP 503/)
    expect(await count(db, names, 'published_at IS NOT NULL')).toBe(2)
  })

  it('runs until SIGTERM, serves metrics meanwhile, then stops gracefully with exit 0', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    await seedEvents(db, names, {count: 7})
    const r = await receiver()
    const relay = start([...base(), '--publisher', 'http', '--target', r.url, '--poll', '50ms', '--metrics-port', '0', '--log-format', 'json'])
    await until(() => r.ids.length === 7, 30_000, 'deliveries')
    const line = relay
      .stderr()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'metrics')
    const metrics = await (await fetch(line.url)).text()
    expect(metrics).toMatch(/^outbox_relay_published_total 7$/m)
    expect(metrics).toMatch(new RegExp(`^outbox_pending\\{table="${names.outbox}"\\} 0$`, 'm'))
    expect(metrics).toMatch(/^outbox_latency_seconds\{.*quantile="0.5"\} /m)
    expect(metrics).toMatch(/^outbox_relay_batch_seconds_count 1$/m)
    // every claim is timed, the empty polls after the batch too
    const claims = Number(/^outbox_relay_claim_seconds_count (\d+)$/m.exec(metrics)?.[1])
    expect(claims).toBeGreaterThanOrEqual(2)
    const batchLine = relay.stderr().split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.msg === 'batch')
    expect(batchLine.claimMs).toBeGreaterThan(0)
    expect(batchLine.ms).toBeGreaterThanOrEqual(batchLine.claimMs)
    expect(metrics).toMatch(/^outbox_database_up 1$/m)
    relay.child.kill('SIGTERM')
    const run = await relay.done
    await r.close()
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('"msg":"relay stopped"')
  })

  it('a crash at relay.after-send leaves the events sent but unmarked; the next run resends them', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    const ids = await seedEvents(db, names, {count: 3})
    const r = await receiver()
    const crashed = await start([...base(), '--publisher', 'http', '--target', r.url, '--once', '--lease', '1s'], {OUTBOX_FAILPOINTS: 'relay.after-send=kill'}).done
    expect(crashed.signal).toBe('SIGKILL')
    expect(crashed.stderr).toContain('outbox-failpoint relay.after-send')
    expect(new Set(r.ids)).toEqual(new Set(ids))
    expect(await count(db, names, 'published_at IS NULL AND lease_owner IS NOT NULL')).toBe(3)
    await until(async () => (await count(db, names, `lease_until < ${db.dialect.render.now}`)) === 3, 10_000, 'the lease to lapse')
    const rerun = await start([...base(), '--publisher', 'http', '--target', r.url, '--once']).done
    await r.close()
    expect(rerun.code).toBe(0)
    expect(r.ids).toHaveLength(6) // at least once: each event twice after the crash
    expect(await count(db, names, 'published_at IS NOT NULL')).toBe(3)
  })

  it('bad input is one line on stderr with exit 2 and nothing changed', async () => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    await seedEvents(db, names, {count: 1})
    for (const args of [
      ['--publisher', 'http'],
      ['--publisher', 'amqp', '--target', 'http://x'],
      ['--publisher', 'stdout', '--batch', '0'],
      ['--publisher', 'stdout', '--backoff', '1s'],
      ['--publisher', 'stdout', '--json'],
      ['--publisher', 'kafka'],
      ['--publisher', 'stdout', '--claim-from', 'nowhere'],
      ['--publisher', 'stdout', '--claim-from', 'mark'], // SQLite keeps no low-water mark
      ['--publisher', 'stdout', '--mark-margin', '2s'], // nor a margin for one
      ['--publisher', 'stdout', '--mark-margin', '-2s'],
    ]) {
      const run = await start([...base(), ...args, '--once']).done
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1)
      expect(run.stderr).toMatch(/^outbox: /)
    }
    expect(await count(db, names, 'published_at IS NULL AND attempts = 0')).toBe(1)
  })

  // --once is a CI gate: any event the run should have delivered and did not is exit 1, with one
  // line saying how many and why; an outage (the broker took nothing, attempts given back) too.
  const fresh = async (n: number) => {
    await db.execute(sql`DELETE FROM ${raw(db.dialect.render.table(names, 'outbox'))}`)
    return seedEvents(db, names, {count: n})
  }

  it('amqp with nothing listening: exit 1, "3 event(s) still pending" and why, attempts kept', async () => {
    await fresh(3)
    const run = await start([...base(), '--publisher', 'amqp', '--target', 'amqp://guest:guest@127.0.0.1:5999', '--once']).done
    expect(run.code, run.stderr).toBe(1)
    expect(verdict(run)).toMatch(/^outbox: 3 event\(s\) still pending: the broker at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:5999 took none of the last batch \(.*ECONNREFUSED 127\.0\.0\.1:5999\); their attempts were given back\. See: outbox status$/)
    expect(run.stderr).not.toContain('guest:guest') // the password
    expect(await count(db, names, 'published_at IS NULL AND attempts = 0')).toBe(3)
  })

  it('--json says the same as the exit code: exitCode 1, undelivered 3, the reason', async () => {
    await fresh(3)
    const run = await start([...base(), '--publisher', 'amqp', '--target', 'amqp://127.0.0.1:5999', '--once', '--json']).done
    expect(run.code, run.stderr).toBe(1)
    expect(JSON.parse(run.stdout)).toMatchObject({exitCode: 1, published: 0, undelivered: 3, reason: expect.stringContaining('ECONNREFUSED')})
  })

  it('a second run while those events wait out the outage backoff: exit 1 too', async () => {
    await fresh(2)
    const gone = await receiver() // a free port, closed again: nothing listens there
    await gone.close()
    const args = [...base(), '--publisher', 'http', '--target', gone.url, '--once', '--backoff', '1m..1m']
    const first = await start(args).done
    expect(first.code, first.stderr).toBe(1)
    expect(verdict(first)).toMatch(new RegExp(`^outbox: 2 event\\(s\\) still pending: the broker at ${gone.url} took none of the last batch \\(.*ECONNREFUSED`))
    const second = await start(args).done
    expect(second.code, second.stderr).toBe(1)
    expect(verdict(second)).toBe('outbox: 2 event(s) still pending: waiting out the backoff of an earlier attempt. See: outbox status')
  })

  it('an http receiver answering 503 to everything: exit 1, the status in the line', async () => {
    await fresh(4)
    const r = await receiver(() => 503)
    const run = await start([...base(), '--publisher', 'http', '--target', r.url, '--once', '--backoff', '1m..1m']).done
    await r.close()
    expect(run.code, run.stderr).toBe(1)
    expect(verdict(run)).toMatch(/^outbox: 4 event\(s\) still pending: .*HTTP 503/)
    expect(await count(db, names, 'published_at IS NOT NULL')).toBe(0)
  })

  it('exit 0 once the receiver takes them all: nothing pending, nothing failed', async () => {
    await fresh(4)
    const r = await receiver(() => 200)
    const run = await start([...base(), '--publisher', 'http', '--target', r.url, '--once', '--json']).done
    await r.close()
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout)).toMatchObject({exitCode: 0, published: 4, undelivered: 0})
  })
})

/** the last line on stderr, where the verdict is */
const verdict = (run: Run) => run.stderr.trim().split('\n').at(-1)

const rabbit = await broker('amqp')
describe.skipIf(!rabbit.available)('outbox relay --once to RabbitMQ', () => {
  let db: Db
  let names: TableNames
  const exchange = uniqueName('outbox_rc')
  let channel: {deleteExchange(name: string): Promise<unknown>; connection: {close(): Promise<void>}}
  beforeAll(async () => {
    ;({db, names} = await openTables(sqliteTarget.url, 'rcq', {inbox: false, archive: false}))
    // a queue bound to the exchange: the publisher retries what no queue would take
    const amqp = (await import('amqplib')).default
    const ch = await (await amqp.connect(rabbit.url)).createChannel()
    await ch.assertExchange(exchange, 'topic', {durable: true})
    const {queue} = await ch.assertQueue('', {exclusive: true})
    await ch.bindQueue(queue, exchange, '#')
    channel = ch
  })
  afterAll(async () => {
    await channel?.deleteExchange(exchange)
    await channel?.connection.close()
    await closeTables(db, names)
  })

  it('the broker up: exit 0; the same events to a port with nothing on it: exit 1', async () => {
    await seedEvents(db, names, {count: 3})
    const up = await start(['--url', sqliteTarget.url, '--table', names.outbox, '--publisher', 'amqp', '--target', rabbit.url, '--exchange', exchange, '--once']).done
    expect(up.code, up.stderr).toBe(0)
    await seedEvents(db, names, {count: 3, base: new Date()})
    const down = await start(['--url', sqliteTarget.url, '--table', names.outbox, '--publisher', 'amqp', '--target', 'amqp://guest:guest@127.0.0.1:5999', '--exchange', exchange, '--once']).done
    expect(down.code, down.stderr).toBe(1)
    expect(await count(db, names, 'published_at IS NULL')).toBe(3)
  })
})

const pg = matrix.find((t) => t.dialect === 'postgres')!
describe.skipIf(!pg.available)('outbox relay --once when the database goes away mid-run', () => {
  let db: Db
  let names: TableNames
  beforeAll(async () => {
    ;({db, names} = await openTables(PG_URL, 'rcd', {inbox: false, archive: false}))
  })
  afterAll(() => closeTables(db, names))

  it('exit 2 with one line: the connection was lost, nothing reported as done', async () => {
    await seedEvents(db, names, {count: 6})
    const u = new URL(PG_URL)
    const proxy = new TcpProxy(u.hostname, Number(u.port) || 5432)
    await proxy.up()
    u.hostname = '127.0.0.1'
    u.port = String(proxy.port)
    // the first request cuts the database off, then is answered: the mark cannot be written
    const r = await receiver(() => {
      void proxy.down()
      return 200
    })
    const run = await start(['--url', u.toString(), '--table', names.outbox, '--publisher', 'http', '--target', r.url, '--batch', '2', '--once']).done
    await r.close()
    await proxy.down()
    expect(run.code, run.stderr).toBe(2)
    expect(verdict(run)).toMatch(/^outbox: (lost the connection to|cannot reach) the database/)
  })
})
