// The broker stops answering without resetting anything: fault proxies between the broker and
// the relay and the consumer black-hole every byte, both ways. Every process must give up on
// its hung request within its own timeout (the relay's publish, the consumer's fetch, heartbeat
// or ping), connect again and retry; the run stays bounded by --run-timeout (the harness waits
// on no worker's request). Everything is delivered once.
// On the loopback broker: from the start until at least HANG_MS after the producer's first op
// and the relay gave up on a publish the black hole swallowed (it closed that connection: its
// retry, the check's attempts 2, follows), not a window a slow relay can sleep through.
// On a real broker (--broker): the connections are made first (a client cannot be hung by a
// black hole before it has a connection to hang), and the hole opens in the very turn the
// relay's first publish ack went through, so its next publish goes into it on a live
// connection; the consumer's connection goes silent at the same moment. New connections are
// black-holed until the relay gave up on one; the hung ones stay hung (a black hole's
// connection never comes back), so the consumer too must find its own dead and connect again:
// RabbitMQ's heartbeats, NATS's and Redis's pings, at half its timeout.
// Either ends after FAULT_LIMIT_MS whatever happened (then "not exercised").
import type {FaultProxy} from '../proxy/fault-proxy.js'
import {FAULT_LIMIT_MS} from './retried.js'
import type {FaultScenario, RunUnderTest, Stage} from './types.js'

/** how long the black hole lasts at least once the producer began (loopback broker) */
const HANG_MS = 400
/** the relay gives up on a hung publish after this long */
const PUBLISH_TIMEOUT_MS = 500
/**
 * a real broker's consumer: a silent connection is lost after about this long (RabbitMQ's
 * heartbeat is a whole second at least: found dead after 2-3 s; NATS's and Redis's pings every 0.5 s)
 */
const CONSUMER_TIMEOUT_MS = 1000

export const hang: FaultScenario<'hang'> = {
  name: 'hang',
  description: 'the broker black-holes the relay and the consumer (no answer, no reset): each gives up within its timeout, retries, everything delivered once',
  kind: 'scenario',
  loopbackOnly: false,
  needsRelay: true,
  arm(run) {
    run.relay.publishTimeoutMs = PUBLISH_TIMEOUT_MS
    return run.loopback ? loopbackHang(run) : realBrokerHang(run)
  },
}

function loopbackHang(run: RunUnderTest): Stage {
  // the consumer's fetch is given up on 0.6 s after it asked (a 1 s long poll and 2 s beyond by default)
  Object.assign(run.consumerPoll, {waitMs: 250, giveUpMs: 350})
  let proxies: Proxies | undefined
  let producerSince = 0
  let open = true
  return {
    async start() {
      proxies = await proxiesFor(run, ['relay#1'], false)
      proxies.set('blackhole')
    },
    onTick() {
      if (!open || !proxies) return
      if (!producerSince && run.workers.get('producer')?.lastOp !== undefined) producerSince = Date.now()
      const elapsed = producerSince ? Date.now() - producerSince : 0
      if ((elapsed >= HANG_MS && proxies.relay.stats.abandoned > 0) || elapsed >= FAULT_LIMIT_MS) {
        open = false
        proxies.set('pass')
      }
    },
    async exercised({observed}) {
      if (!proxies?.relay.stats.swallowed) return {missed: 'the black hole swallowed no publish of the relay'}
      if (observed.maxAttempts < 2) return {missed: 'no publish was retried: the relay never gave up on its hung request'}
      return {}
    },
  }
}

function realBrokerHang(run: RunUnderTest): Stage {
  run.consumerPoll.brokerTimeoutMs = CONSUMER_TIMEOUT_MS
  let proxies: Proxies | undefined
  let holedAt = 0
  let open = false
  return {
    async start() {
      // every relay behind it: whichever publishes first meets the hole
      const p = (proxies = await proxiesFor(
        run,
        Array.from({length: run.relays}, (_, i) => `relay#${i + 1}`),
        true,
      ))
      void p.relay.acked().then(() => {
        holedAt = Date.now()
        open = true
        p.set('blackhole')
      })
    },
    // the consumer's connection made before the hole opens (a connection not yet made would only
    // show a connect timing out); a consumer gone meanwhile (an interruption) is waited for no more
    beforeProducer: () =>
      until(() => {
        const c = run.workers.get('consumer')
        return !c || c.ready || !c.alive
      }, FAULT_LIMIT_MS),
    onTick() {
      if (!open || !proxies) return
      // the relay gave up on a hung connection: new ones go through, the hung ones stay hung
      if (proxies.relay.stats.abandoned > 0 || Date.now() - holedAt >= FAULT_LIMIT_MS) {
        open = false
        proxies.set('pass')
      }
    },
    async exercised() {
      if (!holedAt) return {missed: 'no publish of the relay was acknowledged: the black hole never opened'}
      if (!proxies?.relay.stats.abandoned) return {missed: 'the relay never gave up on a connection the black hole held'}
      if (!proxies.consumer.stats.abandoned) return {missed: 'the consumer never gave up on its hung connection'}
      return {}
    },
  }
}

interface Proxies {
  relay: FaultProxy
  consumer: FaultProxy
  /** both at once */
  set(kind: 'blackhole' | 'pass'): void
}

/**
 * One proxy for the relays and one for the consumer, so that a connection given up on is known
 * to be a relay's; readAcks: the relays' reads the broker's publish acks (acked()).
 */
async function proxiesFor(run: RunUnderTest, relays: string[], readAcks: boolean): Promise<Proxies> {
  const relay = await run.proxyBroker(relays, {readAcks})
  const consumer = await run.proxyBroker(['consumer'])
  return {relay, consumer, set: (kind) => [relay, consumer].forEach((p) => p.setMode({kind}))}
}

/** Resolves once ready() says so, or after limitMs whatever it says. */
async function until(ready: () => boolean, limitMs: number): Promise<void> {
  const limit = Date.now() + limitMs
  while (!ready() && Date.now() < limit) await new Promise((r) => setTimeout(r, 20))
}
