// The broker stops answering without resetting anything: fault proxies between the loopback
// broker and the relay and the consumer black-hole every byte, both ways, from the start until
// at least HANG_MS after the producer's first op and a publish of the relay was swallowed. Every
// process must give up on its hung request within its own timeout (the relay's publish, the
// consumer's fetch) and try again; the run stays bounded by --run-timeout (the harness waits on
// no worker's request). Everything is delivered once.
import type {FaultProxy} from '../proxy/fault-proxy.js'
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
        if (producerSince && Date.now() - producerSince >= HANG_MS && relay.stats.swallowed > 0) {
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
