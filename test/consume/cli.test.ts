// `outbox consume` as a user runs it (./bin/run.js) against the real brokers and PostgreSQL:
// bad input is one line and exit 2 with nothing touched and no driver or broker client loaded;
// --max-events drains and exits 0; a consumer SIGKILLed mid-stream (or inside a batch's
// transaction) and started again leaves every effect exactly once; SIGTERM stops a service after the events in flight.
import {spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {randomBytes} from 'node:crypto'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {broker, BROKER_URLS, type BrokerName} from '../helpers/brokers.js'
import {BIN, cli, cliAsync} from '../helpers/cli.js'
import {until} from '../helpers/publishers.js'
import {claimed, exactlyOnce, fixture, type Fixture} from './fixture.js'
import {TOPOLOGIES, type Topology} from './harness.js'

const root = new URL('../..', import.meta.url).pathname
const tmp = mkdtempSync(join(tmpdir(), 'outbox-consume-'))
let fx: Fixture
let handler: string
beforeAll(async () => {
  fx = await fixture('ccli')
  handler = join(tmp, 'handler.mjs')
  writeFileSync(
    handler,
    // tx is the pg client inside the inbox transaction, as an app's own pool hands it out
    `export default async (event, tx) => {
  await new Promise((resolve) => setTimeout(resolve, Number(process.env.HANDLER_DELAY_MS ?? 0)))
  await tx.query(\`INSERT INTO \${process.env.EFFECTS_TABLE} (event_id, event_type, payload) VALUES ($1, $2, $3)\`, [event.id, event.eventType, JSON.stringify(event.payload)])
}
`,
  )
})
afterAll(async () => {
  await fx?.close()
  rmSync(tmp, {recursive: true, force: true})
})

const tag = () => randomBytes(2).toString('hex')
const dbFlags = () => ['--url', fx.url, '--inbox-table', fx.names.inbox]
/** how many of ids have their effect */
const appliedOf = async (ids: string[]) => {
  const counts = await fx.counts()
  return ids.filter((id) => counts.has(id)).length
}
const env = (delayMs = 0) => ({EFFECTS_TABLE: fx.effects, HANDLER_DELAY_MS: String(delayMs)})

describe('outbox consume: bad input', () => {
  const DRIVERS_AND_CLIENTS = ['pg', 'mysql2', 'better-sqlite3', 'kysely', 'amqplib', 'nats', 'redis', '@redis/client']

  function loaded(args: string[]): {status: number | null; stderr: string; modules: string[]} {
    const file = join(tmp, `loaded-${tag()}.txt`)
    const r = spawnSync(process.execPath, ['--require', join(root, 'test/helpers/loaded-modules.cjs'), BIN, ...args], {
      encoding: 'utf8',
      env: {...process.env, NO_COLOR: '1', OUTBOX_LOADED_MODULES: file, OUTBOX_DATABASE_URL: '', DATABASE_URL: ''},
    })
    const files = readFileSync(file, 'utf8').split('\n')
    expect(files.some((f) => f.includes('/node_modules/@oclif/core/')), 'the hook saw no modules at all').toBe(true)
    return {status: r.status, stderr: r.stderr, modules: DRIVERS_AND_CLIENTS.filter((d) => files.some((f) => f.includes(`/node_modules/${d}/`)))}
  }

  const noDefault = join(tmp, 'no-default.mjs')
  const throwing = join(tmp, 'throwing.mjs')
  beforeAll(() => {
    writeFileSync(noDefault, 'export const handler = async () => {}\n')
    writeFileSync(throwing, 'throw new Error("boom at load")\n')
  })

  const base = (from: string) => ['consume', '--url', 'postgres://app:Sup3rS3cret@127.0.0.1:5432/test', '--from', from, '--consumer', 'c', '--handler']
  const cases: [string, () => string[], RegExp][] = [
    ['an unknown scheme', () => [...base('ftp://x'), handler], /cannot consume from "ftp:\/\/x". Use amqp:\/\/, nats:\/\/, redis:\/\/ or http:\/\/HOST:PORT\/PATH/],
    ['nats without --stream', () => [...base(BROKER_URLS.nats), handler], /--from nats:\/\/ needs --stream/],
    ['a flag of another broker', () => [...base(BROKER_URLS.redis), handler, '--queue', 'q'], /--queue does not apply to redis. It is for amqp/],
    ['a handler that does not exist', () => [...base(BROKER_URLS.amqp), './nope.js'], /--handler .\/nope.js: no such file/],
    ['a handler without a default export', () => [...base(BROKER_URLS.amqp), noDefault], /has no default export function/],
    ['a handler that throws at load', () => [...base(BROKER_URLS.amqp), throwing], /failed to load: boom at load/],
    ['a concurrency of 0', () => [...base(BROKER_URLS.amqp), handler, '--concurrency', '0'], /--concurrency/],
    ['a batch over 64', () => [...base(BROKER_URLS.amqp), handler, '--batch', '65'], /--batch/],
    ['--batch with http', () => [...base('http://127.0.0.1:0/events'), handler, '--batch', '4'], /--batch does not apply to http/],
    ['a bad retry delay', () => [...base(BROKER_URLS.amqp), handler, '--retry-delay', 'soon'], /retry-delay/],
    ['no --consumer', () => ['consume', '--from', BROKER_URLS.amqp, '--handler', handler], /Missing required flag consumer/],
  ]
  for (const [label, args, message] of cases) {
    it(`${label}: exit 2, one line, no password, no driver or broker client loaded`, () => {
      const r = loaded(args())
      expect(r.status, r.stderr).toBe(2)
      expect(r.stderr).toMatch(message)
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1)
      expect(r.stderr).not.toContain('Sup3rS3cret')
      expect(r.modules).toEqual([])
    })
  }

  it('--help loads no driver or broker client', () => {
    const r = spawnSync(process.execPath, [BIN, 'consume', '--help'], {encoding: 'utf8'})
    expect(r.status).toBe(0)
    expect(r.stdout).toMatch(/--max-events/)
    expect(loaded(['consume', '--help']).modules).toEqual([])
  })
})

for (const name of ['amqp', 'nats', 'redis'] as BrokerName[]) {
  const b = await broker(name)
  describe.skipIf(!b.available)(`outbox consume --from ${name}`, () => {
    let t: Topology
    beforeAll(async () => {
      t = await TOPOLOGIES[name](fx.db)
    })
    afterAll(() => t?.cleanup())
    // short redelivery of what a killed consumer held: NATS AckWait, Redis claim-idle (RabbitMQ requeues at once)
    const quick = name === 'nats' ? ['--ack-wait', '2s'] : name === 'redis' ? ['--claim-idle', '1s'] : []

    it('--max-events N: applies N events once, prints the summary, exits 0', async () => {
      const events = claimed(12, tag())
      await t.publish(events)
      const r = cli(['consume', ...dbFlags(), '--from', b.url, ...t.cliFlags, '--consumer', 'cli-drain', '--handler', handler, '--max-events', '12', '--concurrency', '3'], {env: env()})
      expect(r.stderr).not.toMatch(/warn|error/)
      expect(r.status, r.stderr).toBe(0)
      expect(r.stdout).toBe('consumed 12 event(s): 12 applied, 0 duplicate, 0 stale, 0 dead-lettered; 0 handler failure(s) retried\n')
      expect(exactlyOnce(await fx.counts(), events.map((e) => e.id))).toEqual({missing: [], repeated: []})
    })

    it('SIGKILL inside a batch transaction (before its COMMIT), then started again: every effect exactly once', async () => {
      const own = await TOPOLOGIES[name](fx.db) // a stream of its own: the failpoint counts these events only
      const events = claimed(40, tag())
      await own.publish(events)
      const ids = events.map((e) => e.id)
      const args = ['consume', ...dbFlags(), '--from', b.url, ...own.cliFlags, '--consumer', 'cli-kill-batch', '--handler', handler, '--batch', '8', ...quick]
      const applied = () => appliedOf(ids)
      // the 12th effect: after it the process dies, its batch's savepoints open, no COMMIT
      const first = await cliAsync(args, {...env(0), OUTBOX_FAILPOINTS: 'consumer.before-commit=kill@12'}).done
      expect(first.signal, first.stderr).toBe('SIGKILL')
      expect(await applied()).toBeLessThan(12)
      const second = cliAsync(args, env(0))
      await until(async () => (await applied()) === 40, 40_000, 'the restarted consumer to apply the rest')
      second.child.kill('SIGTERM')
      expect((await second.done).status).toBe(0)
      expect(exactlyOnce(await fx.counts(), ids)).toEqual({missing: [], repeated: []})
      await own.cleanup()
    })

    it('SIGKILL mid-stream, then started again: every effect exactly once; SIGTERM stops the service with exit 0', async () => {
      const events = claimed(60, tag())
      await t.publish(events)
      const ids = events.map((e) => e.id)
      const args = ['consume', ...dbFlags(), '--from', b.url, ...t.cliFlags, '--consumer', 'cli-kill', '--handler', handler, '--concurrency', '4', '--batch', '4', ...quick] // at most 16 in flight: the kill lands mid-stream
      const applied = () => appliedOf(ids)
      const first = cliAsync(args, env(30))
      await until(async () => (await applied()) >= 15, 30_000, 'the first consumer to apply 15 events')
      first.child.kill('SIGKILL')
      expect((await first.done).signal).toBe('SIGKILL')
      expect(await applied()).toBeLessThan(60)
      const second = cliAsync(args, env(0))
      await until(async () => (await applied()) === 60, 40_000, 'the restarted consumer to apply the rest')
      second.child.kill('SIGTERM')
      const done = await second.done
      expect(done.status, done.stderr).toBe(0)
      expect(done.stderr).toMatch(/SIGTERM: finishing the events in flight/)
      expect(exactlyOnce(await fx.counts(), ids)).toEqual({missing: [], repeated: []})
    })
  })
}

/** consume --from http:// on a free port, once it listens, with the URL to POST to */
async function httpConsumer(consumer: string, maxEvents: number, handlerDelayMs = 0) {
  const run = cliAsync(['consume', ...dbFlags(), '--from', 'http://127.0.0.1:0/events', '--consumer', consumer, '--handler', handler, '--max-events', String(maxEvents)], env(handlerDelayMs))
  let url = ''
  await until(() => Boolean((url = /listening url=(\S+)/.exec(run.output().stderr)?.[1] ?? '')), 30_000, 'the receiver to listen')
  return {run, url}
}

describe('outbox consume --from http://', () => {
  it('listens where --from says, applies what the relay POSTs, exits 0 after --max-events', async () => {
    const events = claimed(5, tag())
    const {run, url} = await httpConsumer('cli-http', 5)
    const {HttpPublisher} = await import('../../src/publishers/http.js')
    expect(await new HttpPublisher({target: url, mode: 'binary'}).publish(events)).toEqual(events.map(() => ({ok: true})))
    const done = await run.done
    expect(done.status, done.stderr).toBe(0)
    expect(done.stdout).toBe('consumed 5 event(s): 5 applied, 0 duplicate, 0 stale, 0 dead-lettered; 0 handler failure(s) retried\n')
    expect(exactlyOnce(await fx.counts(), events.map((e) => e.id))).toEqual({missing: [], repeated: []})
  })

  it('SIGTERM before --max-events: the events in flight finish, exit 143, the summary says how far it got', async () => {
    const events = claimed(2, tag())
    const {run, url} = await httpConsumer('cli-http-term', 5, 300)
    const {HttpPublisher} = await import('../../src/publishers/http.js')
    const publisher = new HttpPublisher({target: url, concurrency: 2})
    const sent = publisher.publish(events)
    await new Promise((resolve) => setTimeout(resolve, 100)) // both requests in their handler (300 ms)
    run.child.kill('SIGTERM')
    expect(await sent).toEqual([{ok: true}, {ok: true}])
    const done = await run.done
    expect(done.status, done.stderr).toBe(143)
    expect(done.stdout).toBe('consumed 2 event(s): 2 applied, 0 duplicate, 0 stale, 0 dead-lettered; 0 handler failure(s) retried\n')
    expect(exactlyOnce(await fx.counts(), events.map((e) => e.id))).toEqual({missing: [], repeated: []})
  })
})

describe('outbox consume: exit codes that say the work was not done', () => {
  it('--max-events settled with one message dead-lettered: exit 1, one line saying how many', async () => {
    const events = claimed(1, tag())
    const {run, url} = await httpConsumer('cli-http-dead', 2)
    const {HttpPublisher} = await import('../../src/publishers/http.js')
    expect(await new HttpPublisher({target: url}).publish(events)).toEqual([{ok: true}])
    // no outbox event: dead-lettered at once (HTTP: a 400, the relay fails it)
    expect((await fetch(url, {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"hello":1}'})).status).toBe(400)
    const done = await run.done
    expect(done.status, done.stderr).toBe(1)
    expect(done.stdout).toBe('consumed 2 event(s): 1 applied, 0 duplicate, 0 stale, 1 dead-lettered; 0 handler failure(s) retried\n')
    expect(done.stderr.trim().split('\n').at(-1)).toMatch(/^outbox: 1 of 2 message\(s\) dead-lettered: /)
  })

  it('a broker it cannot reach: exit 2, one line, no password', () => {
    const r = cli(['consume', ...dbFlags(), '--from', 'amqp://guest:Sup3rS3cret@127.0.0.1:5999', '--consumer', 'cli-nobroker', '--handler', handler], {env: env()})
    expect(r.status, r.stderr).toBe(2)
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/^outbox: cannot reach RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:5999/)
    expect(r.stderr).not.toContain('Sup3rS3cret')
  })
})
