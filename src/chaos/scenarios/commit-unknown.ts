// The producer's COMMIT gets no answer: the fault proxy resets the connection either once the
// server ran it (its answer dropped: committed; odd iterations, so one run is always this) or
// before the server saw it (rolled back; even iterations). Which of the producer's commits the
// seed chooses, another each iteration.
// The producer sees an error either way and goes on with its next op; whether that transaction
// committed is the database's to tell. Either outcome is fine, as long as business row and
// event agree.
import {isCommit} from '../../../dialects/index.js'
import {choiceFor} from '../seed.js'
import type {FaultScenario} from './types.js'

export const commitUnknown: FaultScenario<'commit-unknown'> = {
  name: 'commit-unknown',
  description: "the producer's COMMIT answer never arrives (reset after the server ran it, or before): either outcome, business row and event agree",
  kind: 'scenario',
  loopbackOnly: false,
  needsRelay: false,
  needsServer: true,
  arm(run) {
    run.producerGoesOn = true
    const nth = choiceFor(run.caseRandom(), run.iteration, Array.from({length: run.ops}, (_, i) => i + 1))
    const moment = run.iteration % 2 === 1 ? 'after-answer' : 'before-server'
    let proxy: Awaited<ReturnType<typeof run.proxyDatabase>> | undefined
    return {
      async start() {
        proxy = await run.proxyDatabase('producer')
        proxy.cutAt({matches: isCommit, moment, nth})
      },
      async exercised() {
        if (!proxy?.stats.statementCuts) return {missed: `the producer's COMMIT #${nth} was never cut (${proxy?.stats.opaque ? 'its connection was encrypted' : 'fewer commits'})`}
        if (!run.workers.get('producer')?.opErrors) return {missed: "the producer's COMMIT answer was dropped, but it reported no failed op"}
        return {}
      },
    }
  },
}
