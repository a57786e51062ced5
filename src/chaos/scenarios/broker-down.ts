// The broker goes away and comes back: connections refused from the start until 500 ms after
// the producer's first business op began, then 503s for at least 500 ms and until the relay has
// been answered 503, then back. The relay must retry with backoff and deliver everything once.
import type {FaultScenario} from './types.js'

/** how long each outage phase lasts at least (several relay polls and backoffs) */
const PHASE_MS = 500

export const brokerDown: FaultScenario<'broker-down'> = {
  name: 'broker-down',
  description: 'broker refuses connections, then answers 503, then recovers: delayed retry, everything delivered once',
  kind: 'scenario',
  loopbackOnly: true,
  needsRelay: true,
  arm(run) {
    // retry through the whole outage, quickly
    run.relay.maxAttempts = 1000
    run.relay.backoff = {baseMs: 100, capMs: 300}
    const broker = run.loopback!
    const outage: {phase: 'refused' | 'starting' | '503' | 'over'; since: number} = {phase: 'refused', since: 0}
    return {
      start: () => broker.stop(),
      onTick() {
        if (outage.phase === 'refused' && run.workers.get('producer')?.lastOp !== undefined) {
          outage.phase = 'starting'
          run.after(PHASE_MS, () => {
            broker.setUnavailable(true)
            void broker.start().then(() => Object.assign(outage, {phase: '503', since: Date.now()}))
          })
        } else if (outage.phase === '503' && Date.now() - outage.since >= PHASE_MS && broker.stats.rejected > 0) {
          outage.phase = 'over'
          broker.setUnavailable(false)
        }
      },
      exercised: async ({observed}) => (observed.maxAttempts < 2 ? {missed: 'no publish was retried: the outage was missed'} : {}),
    }
  },
}
