// Graceful stop for work done in steps (replay and archive batches, chaos runs, verify, the
// relay): the first SIGINT/SIGTERM asks the work to stop at its next safe point, a second one
// exits at once. The exit code then says the work did not finish: 128 + the signal's number
// (or the code already set, as --timeout's 2).
import {SIGNAL_EXIT, type StopSignal} from './errors.js'

export interface StopSignals {
  /** the first signal received, if any */
  readonly received: StopSignal | undefined
  dispose(): void
}

/** `first` starts the stop; `second` says what exiting at once leaves behind, then the process exits. */
export function onStopSignals(first: (signal: StopSignal) => void, second: (signal: StopSignal) => void): StopSignals {
  let received: StopSignal | undefined
  const handler = (signal: StopSignal) => {
    if (received) {
      second(signal)
      process.exit(process.exitCode ?? SIGNAL_EXIT[signal])
    }
    received = signal
    first(signal)
  }
  const signals = Object.keys(SIGNAL_EXIT) as StopSignal[]
  signals.forEach((signal) => process.on(signal, handler))
  return {
    get received() {
      return received
    },
    dispose: () => signals.forEach((signal) => process.off(signal, handler)),
  }
}
