// The broker acknowledges after the lease ran out: a fault proxy between the relays and the
// broker delays every byte both ways, so each publish's answer comes back later than the
// run's lease, and another relay takes the lapsed lease over and publishes the same events again.
// Duplicates are allowed; effects must happen once, and no effect may be applied over a newer
// version of its aggregate (the relays order per aggregate, the consumer checks versions).
import type {FaultProxy} from '../proxy/fault-proxy.js'
import type {FaultScenario} from './types.js'

/** each way: a round trip (0.5 s) outlives the 300 ms lease, well within the publisher's 3 s timeout */
const DELAY_MS = 250
const LEASE_MS = 300

export const slowAck: FaultScenario<'slow-ack'> = {
  name: 'slow-ack',
  description: 'the broker acks after the lease lapsed: another relay publishes the same events too; effects once, order kept',
  kind: 'scenario',
  // it passes through RabbitMQ too, but every round trip of the client's connection set-up is
  // delayed as well (20 s a run): kept to the loopback broker's single HTTP round trip
  loopbackOnly: true,
  needsRelay: true,
  arm(run) {
    run.relays = Math.max(2, run.relays)
    // what the delay outlasts, whatever the relay count: the lease of a lone relay
    run.relay.leaseMs = LEASE_MS
    // a claim takes every event it may (per aggregate ordering: one version of each at a time), so
    // the run makes one delayed round trip per version, not per two events
    run.relay.batch = Math.max(run.relay.batch, run.ops)
    let proxy: FaultProxy | undefined
    return {
      async start() {
        proxy = await run.proxyBroker(Array.from({length: run.relays}, (_, i) => `relay#${i + 1}`))
        proxy.setMode({kind: 'delay', ms: DELAY_MS})
      },
      // a delayed publish still on its way lands after the drain otherwise
      settling: () => (proxy?.inFlight ?? 0) > 0,
      exercised: async ({observed}) => (observed.duplicateDeliveries > 0 ? {} : {missed: 'no event was published twice: no ack came after a lease lapsed'}),
    }
  },
}
