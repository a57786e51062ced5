// Runs a chaos call's runs side by side. Each run is isolated (its own scratch tables, loopback
// broker, fault proxies and worker processes), so several at once change no run's outcome, only
// the wall time: most of a run is waiting (a lease to lapse, a redelivery, a quiet period).
import type {Strategy} from './strategies.js'

/**
 * Runs at once: measured on 2 cores (BENCHMARKS.md, chaos), more lanes stopped paying once the
 * workers' CPU, not the waits, filled the machine.
 */
export const LANES = 4

/**
 * How many lanes a call gets. publish-first's producer holds its write transaction open across
 * its HTTP publish to the harness's broker: on a single-writer database (SQLite) another run's
 * harness query waiting for that lock would stall the very broker it waits on.
 */
export function lanesFor(strategy: Strategy, runs: number): number {
  return Math.max(1, Math.min(strategy === 'dual-write-publish-first' ? 1 : LANES, runs))
}

/**
 * Calls fn for every item, at most `lanes` at a time, in the order given. After the first
 * error (or once `stopped` says so) nothing new starts; the runs already going are awaited,
 * then the first error is thrown.
 */
export async function inLanes<T>(items: readonly T[], lanes: number, fn: (item: T) => Promise<void>, stopped: () => boolean): Promise<void> {
  let next = 0
  let failure: {error: unknown} | undefined
  const lane = async () => {
    while (next < items.length && !failure && !stopped()) {
      const item = items[next++]
      try {
        await fn(item)
      } catch (error) {
        failure ??= {error}
      }
    }
  }
  await Promise.all(Array.from({length: lanes}, lane))
  if (failure) throw failure.error
}
