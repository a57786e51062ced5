// The broker goes away and comes back. On the loopback broker: connections refused from the
// start until 250 ms after the producer's first business op began, then 503s for at least
// 250 ms and until the relay was answered 503 and claimed an event again (attempts 2: the retry
// the check looks for, not a window a slow relay can miss), then back. On a real broker
// (--broker): a fault proxy between the relay and the broker resets every connection from the
// start until at least 0.5 s after the producer began and the relay was refused, then passes
// them. Either outage ends after FAULT_LIMIT_MS whatever happened (then "not exercised"). The
// relay must retry with backoff and deliver everything once.
import type {FaultProxy} from '../proxy/fault-proxy.js'
import {FAULT_LIMIT_MS, retriedWatch} from './retried.js'
import type {FaultScenario, RunUnderTest, Stage} from './types.js'

/** how long each outage phase lasts at least (several relay polls and backoffs) */
const PHASE_MS = 250

export const brokerDown: FaultScenario<'broker-down'> = {
  name: 'broker-down',
  description: 'broker refuses connections (then, on the loopback broker, answers 503), then recovers: delayed retry, everything delivered once',
  kind: 'scenario',
  loopbackOnly: false,
  needsRelay: true,
  arm(run) {
    // retry through the whole outage, quickly
    run.relay.maxAttempts = 1000
    run.relay.backoff = {baseMs: 100, capMs: 300}
    return run.loopback ? loopbackOutage(run) : realBrokerOutage(run)
  },
}

function loopbackOutage(run: RunUnderTest): Stage {
  const broker = run.loopback!
  const outage: {phase: 'refused' | 'starting' | '503' | 'over'; since: number} = {phase: 'refused', since: 0}
  const retried = retriedWatch(run)
  const over = () => {
    const elapsed = Date.now() - outage.since
    return elapsed >= FAULT_LIMIT_MS || (elapsed >= PHASE_MS && broker.stats.rejected > 0 && retried.seen())
  }
  return {
    start: () => broker.stop(),
    onTick() {
      if (outage.phase === 'refused' && run.workers.get('producer')?.lastOp !== undefined) {
        outage.phase = 'starting'
        run.after(PHASE_MS, () => {
          broker.setUnavailable(true)
          void broker.start().then(() => Object.assign(outage, {phase: '503', since: Date.now()}))
        })
      } else if (outage.phase === '503' && over()) {
        outage.phase = 'over'
        broker.setUnavailable(false)
      }
    },
    // what ended the outage counts: an event seen at 2 attempts then may have had one given back since
    exercised: async ({observed}) => (observed.maxAttempts < 2 && !retried.seen() ? {missed: 'no publish was retried: the outage was missed'} : {}),
  }
}

/** A real broker is not ours to stop: the relay reaches it through a proxy that refuses for a while. */
function realBrokerOutage(run: RunUnderTest): Stage {
  let proxy: FaultProxy | undefined
  let producerSince = 0
  let down = true
  return {
    async start() {
      proxy = await run.proxyBroker(['relay#1'])
      proxy.setMode({kind: 'refuse'})
    },
    onTick() {
      if (!down || !proxy) return
      if (!producerSince && run.workers.get('producer')?.lastOp !== undefined) producerSince = Date.now()
      const elapsed = producerSince ? Date.now() - producerSince : 0
      // an outage gives the relay's attempts back: what shows it met one is the refused connection
      if ((elapsed >= 2 * PHASE_MS && proxy.stats.refused > 0) || elapsed >= FAULT_LIMIT_MS) {
        down = false
        proxy.setMode({kind: 'pass'})
      }
    },
    exercised: async () => (proxy?.stats.refused ? {} : {missed: 'the relay never tried the broker during the outage'}),
  }
}
