// The broker stops answering without resetting anything: fault proxies between the loopback
// broker and the relay and the consumer black-hole every byte, both ways, from the start until
// at least HANG_MS after the producer's first op and the relay gave up on a publish the black
// hole swallowed (it closed that connection: its retry, the check's attempts 2, follows), not a
// window a slow relay can sleep through; at most FAULT_LIMIT_MS after the producer began (then
// "not exercised"). Every
// process must give up on its hung request within its own timeout (the relay's publish, the
// consumer's fetch) and try again; the run stays bounded by --run-timeout (the harness waits on
// no worker's request). Everything is delivered once.
import type {FaultProxy} from '../proxy/fault-proxy.js'
import {FAULT_LIMIT_MS} from './retried.js'
import type {FaultScenario} from './types.js'

/** how long the black hole lasts at least once the producer began */
const HANG_MS = 400

export const hang: FaultScenario<'hang'> = {
  name: 'hang',
  description: 'the broker black-holes the relay and the consumer (no answer, no reset): each gives up within its timeout, retries, everything delivered once',
  kind: 'scenario',
  loopbackOnly: true,
  needsRelay: true,
  arm(run) {
    // the hung requests are given up on after this long (the run waits them out): the relay's
    // publish after 0.5 s, the consumer's fetch 0.6 s after it asked (a 1 s long poll and 2 s
    // beyond by default)
    run.relay.publishTimeoutMs = 500
    Object.assign(run.consumerPoll, {waitMs: 250, giveUpMs: 350})
    let relay: FaultProxy | undefined
    let consumer: FaultProxy | undefined
    let producerSince = 0
    let open = true
    return {
      async start() {
        // one proxy each, so that a swallowed request is known to be the relay's
        relay = await run.proxyBroker(['relay#1'])
        consumer = await run.proxyBroker(['consumer'])
        for (const p of [relay, consumer]) p.setMode({kind: 'blackhole'})
      },
      onTick() {
        if (!open || !relay || !consumer) return
        if (!producerSince && run.workers.get('producer')?.lastOp !== undefined) producerSince = Date.now()
        const elapsed = producerSince ? Date.now() - producerSince : 0
        if ((elapsed >= HANG_MS && relay.stats.abandoned > 0) || elapsed >= FAULT_LIMIT_MS) {
          open = false
          for (const p of [relay, consumer]) p.setMode({kind: 'pass'})
        }
      },
      async exercised({observed}) {
        if (!relay?.stats.swallowed) return {missed: 'the black hole swallowed no publish of the relay'}
        if (observed.maxAttempts < 2) return {missed: 'no publish was retried: the relay never gave up on its hung request'}
        return {}
      },
    }
  },
}
