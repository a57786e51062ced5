// Runs a chaos call's runs side by side. Each run is isolated (its own scratch tables, loopback
// broker, fault proxies and worker processes), so several at once change no run's outcome, only
// the wall time: most of a run is waiting (a lease to lapse, a redelivery, a quiet period).
import {availableParallelism, cpus} from 'node:os'
import type {Strategy} from './strategies.js'

/** Runs at once on a quiet machine: 2 per core (most of a run waits, its workers use little CPU). */
export const LANES = 2 * availableParallelism()

/**
 * The cores other processes keep busy now: the machine's CPU time over `ms`, less this
 * process's own. Not the load average: it lags a minute behind, and a chaos call that just
 * ended (its own workers, or the previous call of a bench or CI job) still counts in it.
 */
export async function busyCores(ms = 200): Promise<number> {
  const before = cpuTimes()
  const own = process.cpuUsage()
  await new Promise((r) => setTimeout(r, ms))
  const after = cpuTimes()
  const {user, system} = process.cpuUsage(own)
  const total = after.total - before.total
  if (total <= 0) return 0
  const cores = cpus().length
  const busyMs = ((total - (after.idle - before.idle)) / total) * cores * ms - (user + system) / 1000
  return Math.max(0, Math.min(cores, busyMs / ms))
}

function cpuTimes(): {idle: number; total: number} {
  let idle = 0
  let total = 0
  for (const {times} of cpus()) {
    idle += times.idle
    total += times.user + times.nice + times.sys + times.idle + times.irq
  }
  return {idle, total}
}

/**
 * How many lanes a call gets: LANES on a quiet machine, fewer as other processes take the
 * cores, down to 1 on a machine busy elsewhere (there, at a load of 15-20 on 2 cores, 2 lanes
 * made every run slower and the call 1.0-2.0x as long as one lane). publish-first's producer holds its write transaction open across
 * its HTTP publish to the harness's broker: on a single-writer database (SQLite) another run's
 * harness query waiting for that lock would stall the very broker it waits on, so it runs alone.
 */
export function lanesFor(strategy: Strategy, runs: number, busy: number): number {
  if (strategy === 'dual-write-publish-first') return 1
  const cores = availableParallelism()
  const free = Math.max(0, cores - busy)
  const lanes = Math.round((LANES * free) / cores)
  return Math.max(1, Math.min(lanes, LANES, runs))
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
