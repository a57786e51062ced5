// Runs a chaos call's runs side by side. Each run is isolated (its own scratch tables, loopback
// broker, fault proxies and worker processes), so several at once change no run's outcome, only
// the wall time: most of a run is waiting (a lease to lapse, a redelivery, a quiet period).
import {availableParallelism, loadavg} from 'node:os'
import type {Strategy} from './strategies.js'

/** Runs at once on a quiet machine: 2 per core (most of a run waits, its workers use little CPU). */
export const LANES = 2 * availableParallelism()

/**
 * How many lanes a call gets: LANES on a quiet machine, fewer as the load average passes the
 * cores (on a machine already busy, side-by-side runs start their workers all at once and starve
 * each other: every run slower, the short leases lapsing). publish-first's producer holds its
 * write transaction open across its HTTP publish to the harness's broker: on a single-writer
 * database (SQLite) another run's harness query waiting for that lock would stall the very broker
 * it waits on, so it runs alone.
 */
export function lanesFor(strategy: Strategy, runs: number): number {
  if (strategy === 'dual-write-publish-first') return 1
  const cores = availableParallelism()
  const load = loadavg()[0]
  const lanes = load <= cores ? LANES : Math.floor((LANES * cores) / load)
  return Math.max(1, Math.min(lanes, runs))
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
