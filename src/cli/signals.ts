// Graceful stop for commands that work in steps (replay and archive batches, chaos runs): the
// first SIGINT/SIGTERM asks the work to stop at the next safe point, a second one exits at
// once. The exit code then says the work did not finish: 128 + the signal's number.
import {hasTimedOut} from './base.js'

import {SIGNAL_EXIT, type StopSignal} from '../errors.js'

export {SIGNAL_EXIT, type StopSignal}

export interface SignalStop {
  signal: AbortSignal
  /** the first signal received, if any */
  received?: StopSignal
  dispose(): void
}

/** Lines for stderr (after "outbox: "): what the first signal will do, and what a second did. */
export function stopOnSignal(say: {first: (signal: StopSignal) => string; second: (signal: StopSignal) => string}): SignalStop {
  const controller = new AbortController()
  const handler = (signal: StopSignal) => {
    if (state.received) {
      process.stderr.write(`outbox: ${say.second(signal)}\n`)
      process.exit(process.exitCode ?? SIGNAL_EXIT[signal])
    }
    state.received = signal
    controller.abort()
    // after --timeout (which emits SIGTERM) its own line has said why; the work gets its 5 s grace
    if (!hasTimedOut()) process.stderr.write(`outbox: ${say.first(signal)}\n`)
  }
  const signals = Object.keys(SIGNAL_EXIT) as StopSignal[]
  const state: SignalStop = {
    signal: controller.signal,
    dispose: () => signals.forEach((signal) => process.off(signal, handler)),
  }
  signals.forEach((signal) => process.on(signal, handler))
  return state
}
