// The broker stops answering without resetting anything: a fault proxy between the relay and
// the consumer on one side and the loopback broker on the other black-holes every byte, both
// ways, from 300 ms after the producer's first op until at least HANG_MS passed and a request
// of the relay was swallowed. Every process must give up on its hung request within its own
// timeout (the relay's publish, the consumer's fetch) and try again; the run stays bounded by
// --run-timeout (the harness waits on no worker's request). Everything is delivered once.
import type {FaultProxy} from '../proxy/fault-proxy.js'
import type {FaultScenario} from './types.js'

/** how long the black hole lasts at least */
const HANG_MS = 1000
/** after the producer's first op: the relay has something to publish by then */
const START_MS = 300

export const hang: FaultScenario<'hang'> = {
  name: 'hang',
  description: 'the broker black-holes the relay and the consumer (no answer, no reset): each gives up within its timeout, retries, everything delivered once',
  kind: 'scenario',
  loopbackOnly: true,
  needsRelay: true,
  arm(run) {
    let proxy: FaultProxy | undefined
    const hole: {phase: 'before' | 'starting' | 'open' | 'over'; since: number} = {phase: 'before', since: 0}
    return {
      async start() {
        proxy = await run.proxyBroker(['relay#1', 'consumer'])
      },
      onTick() {
        if (!proxy) return
        if (hole.phase === 'before' && run.workers.get('producer')?.lastOp !== undefined) {
          hole.phase = 'starting'
          run.after(START_MS, () => {
            proxy!.setMode({kind: 'blackhole'})
            Object.assign(hole, {phase: 'open', since: Date.now()})
          })
        } else if (hole.phase === 'open' && Date.now() - hole.since >= HANG_MS && proxy.stats.swallowed > 0) {
          hole.phase = 'over'
          proxy.setMode({kind: 'pass'})
        }
      },
      async exercised({observed}) {
        if (!proxy?.stats.swallowed) return {missed: 'the black hole swallowed nothing'}
        if (observed.maxAttempts < 2) return {missed: 'no publish was retried: the relay met no hung request'}
        return {}
      },
    }
  },
}
