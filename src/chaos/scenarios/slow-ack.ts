// The broker acknowledges after the lease ran out: a fault proxy between the relays and the
// broker holds the publish's answer back past the run's lease, and another relay takes the
// lapsed lease over and publishes the same events again. On the loopback broker it delays every
// byte both ways (one HTTP round trip per publish); on a real broker it holds back the publish
// acks alone (AMQP Basic.Ack, JetStream PubAck, the reply to Redis's XADD: proxy/acks.ts), so
// the clients' connection set-up goes at full speed. The first answer to come is held until
// another relay has claimed one of the events again (attempts 2: the lease was taken over, the
// resend is on its way; under the transaction lease, which writes no attempt: the broker took
// one a second time), at most HOLD_LIMIT_MS: a relay slow to come round to the lapsed lease
// on a loaded machine still meets it, rather than the ack landing first and nothing being resent.
// Duplicates are allowed; effects must happen once, and no effect may be applied over a newer
// version of its aggregate (the relays order per aggregate, the consumer checks versions).
// JetStream drops the resend (Nats-Msg-Id in its duplicate window) and says so in its ack: on
// NATS the resend shows there, not as a duplicate delivery.
import type {FaultProxy} from '../proxy/fault-proxy.js'
import {retriedWatch} from './retried.js'
import type {FaultScenario} from './types.js'

const LEASE_MS = 300
/** loopback, each way: a round trip (0.5 s) outlives the lease, well within the publish timeout */
const DELAY_MS = 250
/** a real broker's ack: past the lease, well within the publish timeout */
const ACK_DELAY_MS = 700
/** the longest an answer is held waiting for the takeover (then "not exercised", unless it came anyway) */
const HOLD_LIMIT_MS = 5000
/** the relays' publish timeout: beyond the longest hold, so that the held publish is answered, not given up on */
const PUBLISH_TIMEOUT_MS = 10_000

export const slowAck: FaultScenario<'slow-ack'> = {
  name: 'slow-ack',
  description: 'the broker acks after the lease lapsed: another relay publishes the same events too; effects once, order kept',
  kind: 'scenario',
  loopbackOnly: false,
  needsRelay: true,
  // 3.4 s against 0.7-1.9 s for a single kill (PostgreSQL, one lane, load 6)
  length: 3,
  arm(run) {
    run.relays = Math.max(2, run.relays)
    // what the delay outlasts, whatever the relay count: the lease of a lone relay
    run.relay.leaseMs = LEASE_MS
    run.relay.publishTimeoutMs = PUBLISH_TIMEOUT_MS
    const real = !run.loopback
    // a claim takes every event it may (per aggregate ordering: one version of each at a time), so
    // the run makes one delayed round trip per version, not per two events
    run.relay.batch = Math.max(run.relay.batch, run.ops)
    let proxy: FaultProxy | undefined
    const claimedAgain = retriedWatch(run)
    // a relay holding its batch by transaction (relay#2 where the dialect has the lease:
    // PostgreSQL) writes no attempt when it takes a lapsed lease over: there, what shows its
    // resend is the broker taking an event a second time (the loopback's count, a JetStream ack
    // of a duplicate), else the hold ran its 5 s limit every time. Elsewhere the attempts alone,
    // as before (a lone relay's own retry of a publish cut short is no takeover)
    const byTransaction = run.relays > 1 && Boolean(run.db.dialect.relay.transactionLease)
    const resent = () => (proxy?.stats.duplicateAcks ?? 0) > 0 || [...(run.loopback?.acceptedById.values() ?? [])].some((n) => n > 1)
    const takenOver = () => (byTransaction && resent()) || claimedAgain.seen()
    let holding = true
    return {
      async start() {
        proxy = await run.proxyBroker(
          Array.from({length: run.relays}, (_, i) => `relay#${i + 1}`),
          {readAcks: real},
        )
        proxy.setMode(real ? {kind: 'delay-acks', ms: ACK_DELAY_MS} : {kind: 'delay', ms: DELAY_MS})
        proxy.holdAnswers()
      },
      onTick() {
        if (!holding || !proxy?.gatedSince) return
        if (takenOver() || Date.now() - proxy.gatedSince >= HOLD_LIMIT_MS) {
          holding = false
          proxy.releaseAnswers()
        }
      },
      // a delayed publish still on its way lands after the drain otherwise
      settling: () => (proxy?.inFlight ?? 0) > 0,
      async exercised({observed}) {
        if (real && !proxy?.stats.delayedAcks) return {missed: 'no publish ack passed the proxy: nothing was held back'}
        if (observed.duplicateDeliveries > 0 || (proxy?.stats.duplicateAcks ?? 0) > 0) return {}
        return {missed: 'no event was published twice: no ack came after a lease lapsed'}
      },
    }
  },
}
