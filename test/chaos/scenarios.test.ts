// The chaos faults one by one, without worker processes: how each arms a run, the state
// machine it drives (against the real loopback broker), and how it tells "not exercised".
import {afterEach, describe, expect, it, vi} from 'vitest'
import {UsageError} from '../../src/core/errors.js'
import {STEPS} from '../../src/core/failpoints.js'
import {uuidv7} from '../../src/core/uuid.js'
import {LoopbackBroker} from '../../src/chaos/broker.js'
import {NOTHING_OBSERVED} from '../../src/chaos/report.js'
import {checkOptions} from '../../src/chaos/options.js'
import {killAtStep, LOOPBACK_ONLY, SCENARIOS, SCENARIO_DESCRIPTIONS, SERVER_ONLY, scenarioByName} from '../../src/chaos/scenarios/index.js'
import type {Failpoint, RunUnderTest, WorkerView} from '../../src/chaos/scenarios/types.js'
import {FAULT_LIMIT_MS} from '../../src/chaos/scenarios/retried.js'
import {caseRng, choiceFor, rng} from '../../src/chaos/seed.js'
import {ChaosSession, type Settings} from '../../src/chaos/session.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import type {ClaimedEvent} from '../../src/schema/event-row.js'

interface FakeRun extends RunUnderTest {
  workers: Map<string, WorkerView>
  scheduled: {ms: number; fn: () => void}[]
  /** what highestAttempts() answers: the outbox as the test pretends it is */
  attempts: number
}

function fakeRun(options: {seed?: number; loopback?: LoopbackBroker; relays?: number; iteration?: number; case?: string} = {}): FakeRun {
  const scheduled: FakeRun['scheduled'] = []
  const seed = options.seed ?? 1
  const run: FakeRun = {
    // the faults under test here do not touch the database
    db: undefined as never,
    tables: undefined as never,
    random: rng(seed),
    iteration: options.iteration ?? 1,
    caseRandom: () => caseRng(seed, options.case ?? 'a case'),
    ops: 6,
    loopback: options.loopback,
    failpoints: new Map<string, Failpoint>(),
    ids: {},
    expectFailed: new Set(),
    relays: options.relays ?? 1,
    relay: {batch: 2, leaseMs: 300, publishTimeoutMs: 3000, pollMs: 50, maxAttempts: 10, backoff: {baseMs: 50, capMs: 400}},
    consumerPoll: {waitMs: 1000, giveUpMs: 2000},
    workers: new Map(),
    scheduled,
    after: (ms, fn) => void scheduled.push({ms, fn}),
    producerGoesOn: false,
    // the faults that use proxies run on real workers (network-faults.test.ts)
    proxyDatabase: () => Promise.reject(new Error('no proxies in a fake run')),
    proxyBroker: () => Promise.reject(new Error('no proxies in a fake run')),
    attempts: 0,
    highestAttempts: async () => run.attempts,
  }
  return run
}

const event = (aggregate: string, version: number, id = uuidv7()): ClaimedEvent => ({
  id,
  eventType: 'order.created',
  aggregateType: 'order',
  aggregateId: aggregate,
  aggregateVersion: version,
  payload: '{}',
  headers: null,
  createdAt: new Date(),
  attempts: 1,
})

let broker: LoopbackBroker | undefined
afterEach(async () => {
  vi.restoreAllMocks()
  await broker?.stop()
  broker = undefined
})

async function startBroker(): Promise<{broker: LoopbackBroker; url: string; publish: (e: ClaimedEvent) => Promise<{ok: boolean}>}> {
  broker = new LoopbackBroker({redeliverMs: 60_000})
  const url = await broker.start()
  const publisher = new HttpPublisher({target: `${url}/publish`, timeoutMs: 2000})
  return {broker, url, publish: async (e) => (await publisher.publish([e]))[0]}
}

async function nextVersion(url: string): Promise<number | null> {
  const r = await fetch(`${url}/next?wait=100`)
  if (r.status === 204) return null
  return ((await r.json()) as {event: {aggregateversion: number}}).event.aggregateversion
}

const outcome = (observed: Partial<typeof NOTHING_OBSERVED> = {}, kills: {ok: boolean}[] = [], armed: string[] = []) => ({
  observed: {...NOTHING_OBSERVED, ...observed},
  kills: kills.map((k) => ({worker: 'relay#1', step: 'relay.after-send', signal: 'SIGKILL', ...k})),
  armed,
})

describe('the list of scenarios', () => {
  it('names each scenario once, in report order, with its description; two need the loopback broker, two a database server', () => {
    expect(SCENARIOS).toEqual(['broker-down', 'out-of-order', 'poison', 'concurrent-relays', 'commit-unknown', 'db-cut', 'hang', 'slow-ack'])
    for (const name of SCENARIOS) {
      expect(scenarioByName(name)).toMatchObject({name, kind: 'scenario', needsRelay: name !== 'commit-unknown'})
      expect(SCENARIO_DESCRIPTIONS[name]).toBe(scenarioByName(name).description)
    }
    expect(LOOPBACK_ONLY).toEqual(['out-of-order', 'poison'])
    expect(SERVER_ONLY).toEqual(['commit-unknown', 'db-cut'])
  })

  it('runs the server-only scenarios by default only with a server URL, and refuses them on a file', async () => {
    expect((await checkOptions({})).scenarios).toEqual(['broker-down', 'out-of-order', 'poison', 'concurrent-relays', 'hang', 'slow-ack'])
    expect((await checkOptions({url: 'postgres://postgres@127.0.0.1:5432/test'})).scenarios).toEqual([...SCENARIOS])
    expect((await checkOptions({url: 'mysql://root@127.0.0.1:3306/test', broker: 'nats://127.0.0.1:4222'})).scenarios).toEqual(['broker-down', 'concurrent-relays', 'commit-unknown', 'db-cut', 'hang', 'slow-ack'])
    await expect(checkOptions({scenarios: ['commit-unknown']})).rejects.toThrow(/scenario commit-unknown cuts database connections through a proxy: it needs a database server reached over TCP/)
    await expect(checkOptions({url: 'postgres://postgres@/test?host=/var/run/postgresql', scenarios: ['db-cut']})).rejects.toThrow(/scenario db-cut cuts/)
  })

  it('refuses a scenario name it does not know, and one that needs the loopback broker with --broker', async () => {
    const unknown = await checkOptions({scenarios: ['meteor' as never]}).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(UsageError)
    expect(unknown).toMatchObject({message: 'unknown scenario meteor', hint: 'Scenarios: broker-down, out-of-order, poison, concurrent-relays, commit-unknown, db-cut, hang, slow-ack'})
    await expect(checkOptions({scenarios: ['poison'], broker: 'nats://127.0.0.1:4222'})).rejects.toThrow(/scenario poison needs the loopback broker/)
    expect((await checkOptions({broker: 'nats://127.0.0.1:4222'})).scenarios).toEqual(['broker-down', 'concurrent-relays', 'hang', 'slow-ack'])
    // every broker we ship a consumer runtime for; http:// is no broker chaos can stand between
    for (const [url, kind] of [['amqp://guest:guest@127.0.0.1:5672', 'amqp'], ['nats://127.0.0.1:4222', 'nats'], ['redis://127.0.0.1:6379', 'redis'], ['rediss://h:6380', 'redis']]) {
      expect((await checkOptions({broker: url})).broker).toEqual({kind, url})
    }
    await expect(checkOptions({broker: 'http://127.0.0.1:1'})).rejects.toThrow(/unsupported broker "http:\/\/127.0.0.1:1"/)
  })
})

describe('a kill at a step', () => {
  it('arms the worker of the step\'s role (the first relay for relay steps) at a pass every run makes, the same for the same seed', () => {
    for (const step of STEPS) {
      const role = step.split('.')[0]
      const fault = killAtStep(step)
      expect(fault).toMatchObject({name: step, kind: 'step', loopbackOnly: false, needsRelay: role === 'relay'})
      const runs = [fakeRun({seed: 9}), fakeRun({seed: 9})]
      for (const run of runs) fault.arm(run)
      const [armed] = runs.map((r) => [...r.failpoints])
      expect(armed).toHaveLength(1)
      expect(armed[0][0]).toBe(role === 'relay' ? 'relay#1' : role)
      expect(armed[0][1].step).toBe(step)
      // 6 ops: the producer and the consumer pass 6 times, a relay at least 3 (batches of 2)
      expect(armed[0][1].hit).toBeGreaterThanOrEqual(1)
      expect(armed[0][1].hit).toBeLessThanOrEqual(role === 'relay' ? 3 : 6)
      expect([...runs[1].failpoints]).toEqual(armed)
    }
  })

  it('arms another pass in each iteration, in an order the seed gives, the same for the same seed', () => {
    const hits = (seed: number, step: (typeof STEPS)[number]) =>
      [1, 2, 3, 4, 5, 6, 7].map((iteration) => {
        const run = fakeRun({seed, iteration, case: step})
        killAtStep(step).arm(run)
        return [...run.failpoints.values()][0].hit
      })
    const producer = hits(9, 'producer.after-commit')
    // iterations 1-6 take each of the 6 passes once, then start over
    expect([...producer.slice(0, 6)].sort()).toEqual([1, 2, 3, 4, 5, 6])
    expect(producer[6]).toBe(producer[0])
    expect(hits(9, 'producer.after-commit')).toEqual(producer)
    const relay = hits(9, 'relay.after-send')
    expect([...relay.slice(0, 3)].sort()).toEqual([1, 2, 3])
    // another seed, another order (for some seed among a few)
    expect([10, 11, 12, 13].some((seed) => hits(seed, 'producer.after-commit').join() !== producer.join())).toBe(true)
  })

  it('choiceFor: a case\'s choices depend on the seed and the case name, not on other cases', () => {
    const choices = ['a', 'b', 'c', 'd']
    const take = (seed: number, name: string) => [1, 2, 3, 4].map((i) => choiceFor(caseRng(seed, name), i, choices))
    expect([...take(5, 'x')].sort()).toEqual(choices)
    expect(take(5, 'x')).toEqual(take(5, 'x'))
    expect([6, 7, 8, 9].map((s) => take(s, 'x').join()).concat(take(5, 'y').join()).some((t) => t !== take(5, 'x').join())).toBe(true)
  })

  it('is exercised only when a worker died at its armed step', async () => {
    const stage = killAtStep('relay.after-send').arm(fakeRun())
    const armed = ['relay#1: relay.after-send=kill@2']
    expect(await stage.exercised(outcome({}, [], armed))).toEqual({missed: 'failpoint never fired (relay#1: relay.after-send=kill@2)'})
    expect(await stage.exercised(outcome({}, [{ok: false}], armed))).toEqual({missed: 'failpoint never fired (relay#1: relay.after-send=kill@2)'})
    expect(await stage.exercised(outcome({}, [{ok: false}, {ok: true}], armed))).toEqual({})
  })
})

describe('concurrent-relays', () => {
  const fault = scenarioByName('concurrent-relays')

  it('runs at least three relays on four times the orders, two of them armed at different relay steps', () => {
    expect(fault.size!(3)).toBe(12)
    const run = fakeRun({relays: 1})
    fault.arm(run)
    expect(run.relays).toBe(3)
    const one = run.failpoints.get('relay#1')!
    const two = run.failpoints.get('relay#2')!
    expect(run.failpoints.size).toBe(2)
    expect(one.hit).toBe(1)
    expect(one.step).not.toBe(two.step)
    for (const f of [one, two]) expect(f.step).toMatch(/^relay\./)
    // the next iteration arms another pair (or the same pair at another hit)
    const next = fakeRun({relays: 1, iteration: 2})
    fault.arm(next)
    expect([...next.failpoints.values()]).not.toEqual([one, two])
    const many = fakeRun({relays: 5})
    fault.arm(many)
    expect(many.relays).toBe(5)
  })

  it('holds the producer back until every live relay polls', async () => {
    const run = fakeRun()
    const stage = fault.arm(run)
    const relay = {alive: true, ready: false}
    run.workers.set('relay#1', relay)
    run.workers.set('relay#2', {alive: false, ready: false}) // a dead one is not waited for
    setTimeout(() => (relay.ready = true), 150)
    const started = Date.now()
    await stage.beforeProducer!()
    expect(relay.ready).toBe(true)
    expect(Date.now() - started).toBeGreaterThanOrEqual(100)
  })
})

describe('broker-down', () => {
  const fault = scenarioByName('broker-down')
  /** lets the stage's database read (highestAttempts) come back */
  const settle = () => new Promise((r) => setTimeout(r, 5))

  /** A run whose producer began and whose broker is back in its 503 phase, the clock stopped at `now`. */
  async function in503Phase() {
    const {broker, url, publish} = await startBroker()
    const run = fakeRun({loopback: broker})
    const stage = fault.arm(run)
    await stage.start!()
    run.workers.set('producer', {alive: true, ready: true, lastOp: 0})
    stage.onTick!()
    const now = Date.now()
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now)
    run.scheduled[0].fn()
    await vi.waitFor(async () => expect((await fetch(`${url}/health`)).status).toBe(200))
    return {run, stage, publish, now, clock}
  }

  it('refuses connections until the producer has begun, then answers 503 until the relay was refused, claimed an event again and 250 ms passed, then recovers', async () => {
    const {broker, url, publish} = await startBroker()
    const run = fakeRun({loopback: broker})
    const stage = fault.arm(run)
    expect(run.relay.maxAttempts).toBe(1000)
    expect(run.relay.backoff).toEqual({baseMs: 100, capMs: 300})

    await stage.start!()
    await expect(fetch(`${url}/health`)).rejects.toThrow()
    stage.onTick!()
    expect(run.scheduled).toEqual([]) // the producer has not begun
    run.workers.set('producer', {alive: true, ready: true, lastOp: 0})
    stage.onTick!()
    stage.onTick!()
    expect(run.scheduled.map((s) => s.ms)).toEqual([250])

    // the clock stands still while the 503 phase is checked: it ends on time, not on load
    const now = Date.now()
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now)
    run.scheduled[0].fn()
    await vi.waitFor(async () => expect((await fetch(`${url}/health`)).status).toBe(200))
    stage.onTick!()
    expect((await publish(event('order-1', 1))).ok).toBe(false) // 503
    clock.mockReturnValue(now + 249)
    stage.onTick!()
    expect((await publish(event('order-1', 1))).ok).toBe(false) // refused, but not 250 ms yet
    clock.mockReturnValue(now + 250)
    stage.onTick!()
    await settle()
    stage.onTick!()
    // refused, 250 ms, but no event claimed again yet: a relay slow to retry still meets the outage
    expect((await publish(event('order-1', 1))).ok).toBe(false)
    run.attempts = 2
    stage.onTick!()
    await settle()
    stage.onTick!()
    vi.restoreAllMocks()
    expect((await publish(event('order-1', 1))).ok).toBe(true)

    expect(await stage.exercised(outcome({maxAttempts: 2}))).toEqual({})
    // the retry that ended the outage counts, even if an attempt was given back since
    expect(await stage.exercised(outcome({maxAttempts: 1}))).toEqual({})
  })

  it('stays in its 503 phase while the relay has not been refused yet', async () => {
    const {run, stage, publish, now, clock} = await in503Phase()
    clock.mockReturnValue(now + 600)
    run.attempts = 2
    stage.onTick!()
    await settle()
    stage.onTick!()
    vi.restoreAllMocks()
    expect((await publish(event('order-1', 1))).ok).toBe(false)
  })

  it('ends its outage after FAULT_LIMIT_MS whatever happened: the run drains and says "not exercised"', async () => {
    const {run, stage, publish, now, clock} = await in503Phase()
    clock.mockReturnValue(now + FAULT_LIMIT_MS - 1)
    stage.onTick!()
    expect((await publish(event('order-1', 1))).ok).toBe(false)
    clock.mockReturnValue(now + FAULT_LIMIT_MS)
    stage.onTick!()
    vi.restoreAllMocks()
    expect((await publish(event('order-1', 1))).ok).toBe(true)
    expect(await stage.exercised(outcome({maxAttempts: 1}))).toEqual({missed: 'no publish was retried: the outage was missed'})
  })
})

describe('out-of-order', () => {
  const fault = scenarioByName('out-of-order')

  it('holds every message until nothing is pending, then hands out the newest first', async () => {
    const {broker, url, publish} = await startBroker()
    const run = fakeRun({loopback: broker})
    const stage = fault.arm(run)
    for (const v of [1, 2]) expect((await publish(event('order-1', v))).ok).toBe(true)
    expect(await nextVersion(url)).toBeNull()
    stage.onDraining!(1)
    expect(await nextVersion(url)).toBeNull()
    stage.onDraining!(0)
    expect(await nextVersion(url)).toBe(2)
    expect(await nextVersion(url)).toBe(1)
    expect(await stage.exercised(outcome({stale: 0}))).toEqual({missed: 'no stale version reached the consumer'})
    expect(await stage.exercised(outcome({stale: 1}))).toEqual({})
  })
})

describe('poison', () => {
  it('gives op 0\'s first event an id the broker always rejects, expected to end failed after 3 attempts', async () => {
    const {broker, publish} = await startBroker()
    const run = fakeRun({loopback: broker})
    scenarioByName('poison').arm(run)
    const id = run.ids['0']
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect([...run.expectFailed]).toEqual([id])
    expect(run.relay.maxAttempts).toBe(3)
    expect((await publish(event('order-1', 1, id))).ok).toBe(false)
    expect((await publish(event('order-1', 1, id))).ok).toBe(false)
    expect((await publish(event('order-2', 1))).ok).toBe(true)
  })
})

describe('a chaos session', () => {
  it('guards process exit for its workers only while it is open', () => {
    const before = process.listenerCount('exit')
    const session = new ChaosSession({} as Settings)
    expect(process.listenerCount('exit')).toBe(before + 1)
    session.close()
    expect(process.listenerCount('exit')).toBe(before)
  })
})
