// How long the relay waits after a failed cycle (claim or settle threw). Failures in a row
// double the wait from the poll interval; a database that is down, restarting or out of
// connection slots is tried again at least every RECONNECT_WAIT_MS, so the relay is back
// within a second or two of the server, however long the outage was.
import type {Dialect} from '../../dialects/index.js'
import {isConnectionTrouble} from '../db/index.js'

/** the longest wait after failures in a row that are not a lost connection (a missing table, a bug) */
export const MAX_FAILURE_WAIT_MS = 30_000
/**
 * the longest wait while the database cannot be reached: one refused connect per relay is
 * cheap, and issue 23 asks for the clean p99 back within 10 s of a restart (with the 30 s cap a
 * relay at --poll 100ms stayed idle 15 s and more after a 35 s MariaDB restart: BENCHMARKS.md)
 */
export const RECONNECT_WAIT_MS = 1000

/** The wait after the `failures`-th failed cycle in a row, which threw `error`. */
export function failureWait(pollMs: number, failures: number, error: unknown, dialect: Dialect): number {
  const doubled = pollMs * 2 ** Math.min(failures - 1, 10)
  const cap = isConnectionTrouble(error, dialect) ? Math.max(pollMs, RECONNECT_WAIT_MS) : MAX_FAILURE_WAIT_MS
  return Math.min(doubled, cap)
}
