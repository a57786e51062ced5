// The loopback broker (../broker.ts) as a consumer runtime's DeliverySource: the shipped loop
// (src/consume/loop.ts) takes its messages one at a time, runs Consumer.handle and acks only
// after the commit, as it does on a real broker. Its messages are the http publisher's
// CloudEvents, read by the HTTP runtime's decoder.
import {decodeCloudEvent} from '../../consume/cloudevents.js'
import {decodeOrReason} from '../../consume/event.js'
import type {Delivery, DeliverySource} from '../../consume/loop.js'
import {pause} from '../../consume/runtime.js'
import type {ConsumerPoll} from '../scenarios/types.js'

interface Handed {
  tag: number
  /** deliveries of this message so far, this one included */
  deliveries: number
  event: object
}

const STRUCTURED = {'content-type': 'application/cloudevents+json'}
/** by default: the broker holds a request 1 s when it has nothing; one that answered nothing 2 s after that is hung (a loaded machine's slow answer is not) */
const POLL: ConsumerPoll = {waitMs: 1000, giveUpMs: 2000}

export function loopbackSource(base: string, poll: ConsumerPoll = POLL): DeliverySource {
  const stopped = new AbortController()
  // an ack may meet the broker down (an outage scenario): it is tried for a while
  const ack = async (tag: number) => {
    for (let i = 0; i < 50; i++) {
      try {
        const r = await fetch(`${base}/ack?tag=${tag}`, {method: 'POST', signal: AbortSignal.timeout(5000)})
        await r.body?.cancel()
        return
      } catch {
        await pause(100)
      }
    }
  }
  const delivery = (m: Handed): Delivery => ({
    event: decodeOrReason(() => decodeCloudEvent({headers: STRUCTURED, body: m.event})),
    attempt: m.deliveries,
    ack: () => ack(m.tag),
    // the broker hands an unacked message out again once its redelivery time is up
    retry: async () => {},
    // no dead letters at the loopback broker: the message goes, and the harness reports the lost effect
    deadLetter: () => ack(m.tag),
  })
  return {
    async next() {
      while (!stopped.signal.aborted) {
        let handed: Handed | undefined
        try {
          // a stop ends the long poll at once; a hung broker (the hang scenario) is given up on soon after its wait
          const response = await fetch(`${base}/next?wait=${poll.waitMs}`, {signal: AbortSignal.any([stopped.signal, AbortSignal.timeout(poll.waitMs + poll.giveUpMs)])})
          if (response.status === 200) handed = (await response.json()) as Handed
          else await response.body?.cancel()
        } catch {
          await pause(100, stopped.signal) // the broker is down (an outage scenario): ask again
        }
        // taken after stop(): left unacked, the broker hands it out again
        if (handed && !stopped.signal.aborted) return delivery(handed)
      }
      return null
    },
    async stop() {
      stopped.abort()
    },
    async close() {},
  }
}
