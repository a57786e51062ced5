// Several relays on one table, two of them killed mid-batch at different relay steps: the
// survivors take over the lapsed leases and nothing is lost or applied twice.
import {STEPS} from '../../core/failpoints.js'
import {choiceFor} from '../seed.js'
import {killsFired} from './kill-at-step.js'
import type {FaultScenario} from './types.js'

const RELAY_STEPS = STEPS.filter((s) => s.startsWith('relay.'))
/** how long the relays get to start polling before the producer starts anyway */
const READY_WAIT_MS = 15_000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const concurrentRelays: FaultScenario<'concurrent-relays'> = {
  name: 'concurrent-relays',
  description: 'several relays on one table, two of them killed mid-batch',
  kind: 'scenario',
  loopbackOnly: false,
  needsRelay: true,
  // 8.6 s against 0.7-1.9 s for a single kill (PostgreSQL, one lane, load 6)
  length: 8,
  // enough events for every relay to claim some
  size: (orders) => orders * 4,
  arm(run) {
    run.relays = Math.max(3, run.relays)
    // competing relays on a loaded machine: a short lease has them take each other's batches over and over
    run.relay.leaseMs = Math.max(run.relay.leaseMs, 1000)
    // each iteration another pair of steps (and hit of the second)
    const pairs = RELAY_STEPS.flatMap((first) => RELAY_STEPS.filter((x) => x !== first).flatMap((second) => [1, 2].map((hit) => ({first, second, hit}))))
    const {first, second, hit} = choiceFor(run.caseRandom(), run.iteration, pairs)
    run.failpoints.set('relay#1', {step: first, hit: 1})
    run.failpoints.set('relay#2', {step: second, hit})
    return {
      async beforeProducer() {
        // every relay polling before the first event, so they really compete
        const until = Date.now() + READY_WAIT_MS
        while ([...run.workers.values()].some((w) => w.alive && !w.ready) && Date.now() < until) await sleep(20)
      },
      exercised: killsFired,
    }
  },
}
