// `outbox chaos` end to end: the compiled CLI (dist/, as `npm ci` builds it) spawning real
// worker processes. The default matrix on SQLite and both servers must pass; the broken
// strategies must be caught with counts and witnesses; a step that never fires must fail.
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {STEPS} from '../../src/core/failpoints.js'
import {SCENARIOS, type ChaosReport} from '../../src/chaos/runner.js'
import {broker} from '../helpers/brokers.js'
import {targets} from '../helpers/targets.js'

const root = new URL('../..', import.meta.url).pathname
const bin = join(root, 'bin/run.js')
const matrix = await targets()

function chaos(args: string[]): {status: number | null; report?: ChaosReport; stdout: string; stderr: string} {
  if (!existsSync(join(root, 'dist/commands/chaos.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm ci does it)')
  const r = spawnSync(process.execPath, [bin, 'chaos', ...args], {encoding: 'utf8', timeout: 170_000, env: {...process.env, NO_COLOR: '1'}})
  let report: ChaosReport | undefined
  if (args.includes('--json') && r.stdout.trim().startsWith('{')) report = JSON.parse(r.stdout) as ChaosReport
  return {status: r.status, report, stdout: r.stdout, stderr: r.stderr}
}

const byCase = (report: ChaosReport, name: string) => report.cases.find((c) => c.case === name)!
const violationsOf = (report: ChaosReport, name: string, invariant: string) => byCase(report, name).violations.filter((v) => v.invariant === invariant)

for (const target of matrix) {
  const urlArgs = target.dialect === 'sqlite' ? [] : ['--url', target.url]
  describe.skipIf(!target.available)(`outbox chaos on ${target.dialect}`, () => {
    it('the default matrix: every step killed for real, every scenario run, every invariant held', {timeout: 180_000}, () => {
      const {status, report, stderr} = chaos([...urlArgs, '--json', '--seed', '7'])
      expect(report, stderr).toBeDefined()
      // the fault proxy's database cuts need a server: not on the SQLite file
      const scenarios = SCENARIOS.filter((s) => target.dialect !== 'sqlite' || !['commit-unknown', 'db-cut'].includes(s))
      expect(report!.cases.map((c) => c.case)).toEqual([...STEPS, ...scenarios])
      for (const c of report!.cases) expect({case: c.case, verdict: c.verdict, violations: c.violations}).toEqual({case: c.case, verdict: 'pass', violations: []})
      expect(status).toBe(0)
      expect(report!.ok).toBe(true)
      expect(report!.dialect).toBe(target.dialect)
      for (const run of report!.runs.filter((r) => r.kind === 'step')) {
        // died by SIGKILL at exactly the armed step
        expect(run.kills.length).toBeGreaterThan(0)
        for (const k of run.kills) expect(k).toMatchObject({step: run.case, signal: 'SIGKILL', ok: true})
      }
      for (const c of report!.cases) {
        expect(c.duplicateEffects).toBe(0)
        expect(c.lost + c.phantom + c.stuck).toBe(0)
      }
      // at-least-once working: the batch sent before the kill was sent again, and deduplicated
      expect(byCase(report!, 'relay.after-send').duplicateDeliveries).toBeGreaterThan(0)
      expect(byCase(report!, 'consumer.after-commit').duplicateDeliveries).toBeGreaterThan(0)
      expect(byCase(report!, 'out-of-order').stale).toBeGreaterThan(0)
      expect(byCase(report!, 'poison').failed).toBe(1)
      expect(byCase(report!, 'poison').maxAttempts).toBe(3)
      expect(byCase(report!, 'broker-down').maxAttempts).toBeGreaterThan(1)
      expect(byCase(report!, 'concurrent-relays').kills).toBeGreaterThan(0)
      expect(byCase(report!, 'hang').maxAttempts).toBeGreaterThan(1)
      expect(byCase(report!, 'slow-ack').duplicateDeliveries).toBeGreaterThan(0)
      if (target.dialect !== 'sqlite') expect(byCase(report!, 'db-cut').duplicateDeliveries).toBeGreaterThan(0)
    })
  })
}

describe('outbox chaos catches the broken strategies (SQLite)', () => {
  it('dual-write-commit-first: events lost when killed between commit and publish', {timeout: 120_000}, () => {
    const {status, report} = chaos(['--strategy', 'dual-write-commit-first', '--json', '--seed', '3'])
    expect(status).toBe(1)
    const c = byCase(report!, 'producer.after-commit')
    expect(c.verdict).toBe('fail')
    expect(c.lost).toBeGreaterThan(0)
    const [lost] = violationsOf(report!, 'producer.after-commit', 'delivered')
    expect(lost.count).toBe(c.lost)
    expect(lost.witnesses[0]).toMatch(/^order-\d+#\d$/)
    // no relay in a dual write: its steps are not exercised, which is a failure, not a pass
    expect(byCase(report!, 'relay.after-send').verdict).toBe('not exercised')
  })

  it('dual-write-publish-first: phantom events when killed between publish and commit', {timeout: 120_000}, () => {
    const {status, report} = chaos(['--strategy', 'dual-write-publish-first', '--steps', 'producer.before-commit', '--json'])
    expect(status).toBe(1)
    const c = byCase(report!, 'producer.before-commit')
    expect(c.phantom).toBeGreaterThan(0)
    const [phantom] = violationsOf(report!, 'producer.before-commit', 'atomic')
    expect(phantom.witnesses[0]).toMatch(/^[0-9a-f-]{36}$/)
    // the phantom is an order that was never created, or a payment that never happened (the kill
    // point is any op: a created or a paid one)
    expect(violationsOf(report!, 'producer.before-commit', 'business')[0].witnesses.join()).toMatch(/never committed|downstream at version 2 \(paid\), committed 1 \(created\)/)
  })

  it('--consumer naive: effects applied twice after a resend or a redelivery; junit carries the witnesses', {timeout: 120_000}, () => {
    const junit = join(mkdtempSync(join(tmpdir(), 'outbox-chaos-')), 'report.xml')
    const {status, report} = chaos(['--consumer', 'naive', '--steps', 'relay.after-send,consumer.after-commit', '--scenarios', 'none', '--json', '--junit', junit])
    expect(status).toBe(1)
    for (const step of ['relay.after-send', 'consumer.after-commit']) {
      const c = byCase(report!, step)
      expect(c.duplicateEffects).toBeGreaterThan(0)
      const [twice] = violationsOf(report!, step, 'effect-once')
      expect(twice.witnesses[0]).toMatch(/ \(x2\)$/)
    }
    const xml = readFileSync(junit, 'utf8')
    expect(xml.match(/<testcase /g)).toHaveLength(2)
    expect(xml).toContain('<failure message="effect-once: side effects applied more than once')
    expect(xml).toContain(twiceId(report!))
  })
})

describe('outbox chaos catches a consumer that acks before its commit (SQLite, loopback broker)', () => {
  it('--consumer ack-first: killed between its ack and its commit, the effect is lost: an effect-once violation, exit 1', {timeout: 60_000}, () => {
    const {status, report} = chaos(['--consumer', 'ack-first', '--steps', 'consumer.before-commit,consumer.after-commit', '--scenarios', 'none', '--json'])
    expect(status).toBe(1)
    const c = byCase(report!, 'consumer.before-commit')
    expect(c.verdict).toBe('fail')
    const [never] = violationsOf(report!, 'consumer.before-commit', 'effect-once')
    expect(never).toMatchObject({message: 'delivered but the side effect was never applied', count: 1})
    expect(never.witnesses[0]).toMatch(/^[0-9a-f-]{36}$/)
    // a kill after the commit loses nothing, even acked early: the runtime's loop is the same
    expect(byCase(report!, 'consumer.after-commit').verdict).toBe('pass')
  })
})

function twiceId(report: ChaosReport): string {
  return violationsOf(report, 'relay.after-send', 'effect-once')[0].witnesses[0].split(' ')[0]
}

describe('outbox chaos with a --scenario module (SQLite)', () => {
  it('runs the README example: its business invariant holds with the idempotent consumer and fails with the naive one', {timeout: 120_000}, () => {
    const ok = chaos(['--scenario', join(root, 'examples/chaos-scenario.js'), '--steps', 'relay.after-send', '--scenarios', 'none', '--json'])
    expect(ok.status).toBe(0)
    expect(ok.report!.scenario).toBe('signups')
    const bad = chaos(['--scenario', join(root, 'examples/chaos-scenario.js'), '--steps', 'relay.after-send', '--scenarios', 'none', '--consumer', 'naive', '--json'])
    expect(bad.status).toBe(1)
    expect(violationsOf(bad.report!, 'relay.after-send', 'business')[0].witnesses[0]).toMatch(/^user-\d+: 2 welcome emails$/)
  })

  it('a step that never fires is "not exercised" and fails the run', {timeout: 60_000}, () => {
    const {status, report, stdout} = chaos(['--scenario', join(root, 'test/fixtures/chaos-silent-scenario.js'), '--steps', 'relay.after-claim', '--scenarios', 'none'].concat([]))
    expect(report).toBeUndefined()
    expect(status).toBe(1)
    expect(stdout).toMatch(/relay\.after-claim .* not exercised/)
    expect(stdout).toContain('failpoint never fired')
  })
})

const BROKERS = {amqp: await broker('amqp'), nats: await broker('nats'), redis: await broker('redis')}
const AMQP_URL = BROKERS.amqp.url

describe.skipIf(!BROKERS.amqp.available)('outbox chaos through RabbitMQ (SQLite)', () => {
  it('every step, broker-down, hang and slow-ack (through the fault proxy) and concurrent relays through the relay\'s amqp publisher and the amqp consumer runtime', {timeout: 180_000}, () => {
    const {status, report, stderr} = chaos(['--broker', AMQP_URL, '--json'])
    expect(report, stderr).toBeDefined()
    expect(report!.cases.map((c) => c.case)).toEqual([...STEPS, 'broker-down', 'concurrent-relays', 'hang', 'slow-ack'])
    for (const c of report!.cases) expect({case: c.case, verdict: c.verdict, violations: c.violations}).toEqual({case: c.case, verdict: 'pass', violations: []})
    expect(status).toBe(0)
    expect(report!.broker).toBe('amqp://***@127.0.0.1:5672')
    // RabbitMQ redelivers what a killed consumer had not acked
    expect(byCase(report!, 'consumer.after-commit').duplicateDeliveries).toBeGreaterThan(0)
  })

  it('the naive consumer applies a RabbitMQ redelivery twice', {timeout: 60_000}, () => {
    const {status, report} = chaos(['--broker', AMQP_URL, '--consumer', 'naive', '--steps', 'consumer.after-commit', '--scenarios', 'none', '--json'])
    expect(status).toBe(1)
    expect(byCase(report!, 'consumer.after-commit').duplicateEffects).toBeGreaterThan(0)
  })
})

// Each broker we ship a consumer runtime for: its consumer SIGKILLed before and after its
// commit, the redelivery applied exactly once; and a consumer that acks before its commit caught.
for (const b of Object.values(BROKERS)) {
  describe.skipIf(!b.available)(`outbox chaos: a consumer killed mid-stream on ${b.name} (SQLite)`, () => {
    it('relay and consumer kills through the relay\'s publisher and the consumer runtime: every effect exactly once', {timeout: 120_000}, () => {
      const steps = ['relay.after-send', 'consumer.before-commit', 'consumer.after-commit']
      const {status, report, stderr} = chaos(['--broker', b.url, '--steps', steps.join(','), '--scenarios', 'none', '--json'])
      expect(report, stderr).toBeDefined()
      for (const c of report!.cases) expect({case: c.case, verdict: c.verdict, violations: c.violations}).toEqual({case: c.case, verdict: 'pass', violations: []})
      expect(report!.cases.map((c) => c.case)).toEqual(steps)
      expect(status).toBe(0)
      for (const c of report!.cases) expect({case: c.case, duplicateEffects: c.duplicateEffects, lost: c.lost}).toEqual({case: c.case, duplicateEffects: 0, lost: 0})
      // what the killed consumer had committed but not acked came again, and was skipped
      expect(byCase(report!, 'consumer.after-commit').duplicateDeliveries).toBeGreaterThan(0)
    })

    it('--consumer ack-first: the effect of the message acked before the commit is lost, and reported', {timeout: 60_000}, () => {
      const {status, report} = chaos(['--broker', b.url, '--consumer', 'ack-first', '--steps', 'consumer.before-commit', '--scenarios', 'none', '--json'])
      expect(status).toBe(1)
      expect(report!.consumer).toBe('ack-first')
      const [never] = violationsOf(report!, 'consumer.before-commit', 'effect-once')
      expect(never.message).toBe('delivered but the side effect was never applied')
      expect(never.count).toBe(1)
    })
  })
}

// A database server between a real broker's runtime and the harness: the harness waits for
// every published event's ack in its own tables (on MariaDB that wait once failed on the
// collation of a cast against the database's default one).
const REDIS = BROKERS.redis
for (const target of matrix.filter((m) => m.dialect !== 'sqlite')) {
  describe.skipIf(!target.available || !REDIS.available)(`outbox chaos on ${target.dialect} through Redis`, () => {
    it('consumer kills through the Redis runtime: every effect exactly once, exit 0', {timeout: 120_000}, () => {
      const steps = ['relay.after-send', 'consumer.after-commit']
      const {status, report, stderr} = chaos(['--url', target.url, '--broker', REDIS.url, '--steps', steps.join(','), '--scenarios', 'none', '--json'])
      expect(report, stderr).toBeDefined()
      for (const c of report!.cases) expect({case: c.case, verdict: c.verdict, duplicateEffects: c.duplicateEffects, lost: c.lost}).toEqual({case: c.case, verdict: 'pass', duplicateEffects: 0, lost: 0})
      expect(status).toBe(0)
    })
  })
}

describe('outbox chaos input errors', () => {
  it('bad input is one line on stderr and exit 2', () => {
    for (const args of [['--steps', 'relay.after-nothing'], ['--scenarios', 'meteor'], ['--broker', 'http://127.0.0.1:1'], ['--scenario', '/nonexistent/s.js'], ['--url', 'sqlite::memory:'], ['--broker', AMQP_URL, '--scenarios', 'poison'], ['--scenarios', 'commit-unknown']]) {
      const r = chaos(args)
      expect(r.status, args.join(' ')).toBe(2)
      expect(r.stderr.trim().split('\n').filter((l) => l.startsWith('outbox: '))).toHaveLength(1)
      expect(r.stderr).not.toMatch(/\n\s+at /)
    }
  })
})
