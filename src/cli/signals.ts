// The CLI's graceful stop (replay, archive, chaos, verify): onStopSignals with an AbortSignal
// for the work and one stderr line for each signal.
import {SIGNAL_EXIT, type StopSignal} from '../core/errors.js'
import {onStopSignals, type StopSignals} from '../core/stop-signals.js'
import {hasTimedOut} from './base.js'

export {SIGNAL_EXIT, type StopSignal}

export interface SignalStop extends StopSignals {
  signal: AbortSignal
}

/** Lines for stderr (after "outbox: "): what the first signal will do, and what a second did. */
export function stopOnSignal(say: {first: (signal: StopSignal) => string; second: (signal: StopSignal) => string}): SignalStop {
  const controller = new AbortController()
  const stop = onStopSignals(
    (signal) => {
      controller.abort()
      // after --timeout (which emits SIGTERM) its own line has said why; the work gets its 5 s grace
      if (!hasTimedOut()) process.stderr.write(`outbox: ${say.first(signal)}\n`)
    },
    (signal) => process.stderr.write(`outbox: ${say.second(signal)}\n`),
  )
  return {
    signal: controller.signal,
    get received() {
      return stop.received
    },
    dispose: stop.dispose,
  }
}
