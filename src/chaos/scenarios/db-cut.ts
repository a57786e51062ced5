// Database connections cut mid-batch, through the fault proxy: the relay's as it marks a
// batch published (sent to the broker, never marked: the lease lapses and it is sent again),
// and the consumer's as it commits an inbox transaction (never committed: the message must be
// delivered again and applied once). Both must recover on a new connection. The consumer's
// first COMMIT is cut (a first delivery, never a duplicate whose loss would change nothing), and
// a later mark of the relay (the seed chooses which, another each iteration): never the first
// batch's, whose resend would hand the consumer the message it failed on again.
import {isCommit} from '../../../dialects/index.js'
import {choiceFor} from '../seed.js'
import type {FaultProxy} from '../proxy/fault-proxy.js'
import type {FaultScenario} from './types.js'

/**
 * The relay's mark: the UPDATE that sets published_at (dialect.relay.markPublished), alone or
 * carried by the next claim (inside its statement on PostgreSQL, first in its transaction
 * elsewhere): cut, the claim with it is rolled back, and the mark rides on a later one.
 */
const isMark = (text: string) => /\bupdate\b[^;]*?\bset\s+published_at\s*=/i.test(text)

export const dbCut: FaultScenario<'db-cut'> = {
  name: 'db-cut',
  description: "the relay's and the consumer's database connections cut mid-batch (mark and inbox COMMIT never reach the server): resent, applied once",
  kind: 'scenario',
  loopbackOnly: false,
  needsRelay: true,
  // 1.6 s against 0.7-1.9 s for a single kill (PostgreSQL, one lane, load 6)
  length: 1.5,
  needsServer: true,
  arm(run) {
    // the relay makes at least this many marks (a batch holds at most `batch` events)
    const marks = Math.max(2, Math.ceil(run.ops / run.relay.batch))
    const mark = choiceFor(run.caseRandom(), run.iteration, Array.from({length: marks - 1}, (_, i) => i + 2))
    const commit = 1
    const proxies: FaultProxy[] = []
    return {
      async start() {
        const relay = await run.proxyDatabase('relay#1')
        relay.cutAt({matches: isMark, moment: 'before-server', nth: mark})
        const consumer = await run.proxyDatabase('consumer')
        consumer.cutAt({matches: isCommit, moment: 'before-server', nth: commit})
        proxies.push(relay, consumer)
      },
      async exercised() {
        const [relay, consumer] = proxies.map((p) => p.stats.statementCuts > 0)
        if (relay && consumer) return {}
        return {missed: [relay ? '' : `the relay's mark #${mark} was never cut`, consumer ? '' : `the consumer's COMMIT #${commit} was never cut`].filter(Boolean).join('; ')}
      },
    }
  },
}
