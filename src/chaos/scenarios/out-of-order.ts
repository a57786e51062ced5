// The broker holds every message until all events are published, then hands the newest
// versions of each aggregate out first: the consumer must detect the stale ones, not apply them.
import type {FaultScenario} from './types.js'

export const outOfOrder: FaultScenario<'out-of-order'> = {
  name: 'out-of-order',
  description: 'the broker hands out newer versions of an aggregate first: stale versions detected, not applied',
  kind: 'scenario',
  loopbackOnly: true,
  needsRelay: true,
  arm(run) {
    run.loopback?.hold()
    return {
      onDraining(pending) {
        if (pending === 0) run.loopback?.release({reverse: true})
      },
      exercised: async ({observed}) => (observed.stale === 0 ? {missed: 'no stale version reached the consumer'} : {}),
    }
  },
}
