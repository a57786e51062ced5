// Retry delays: exponential in the attempt number, capped, with "equal jitter" (half fixed,
// half random) so a burst of failures spreads out but never retries sooner than half the step.

export interface Backoff {
  baseMs: number
  capMs: number
}

export const DEFAULT_BACKOFF: Backoff = {baseMs: 1000, capMs: 10 * 60_000}

/** Delay before the next attempt, after `attempts` failed attempts (1-based). */
export function backoffDelay(attempts: number, backoff: Backoff, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempts - 1, 0), 52)
  const step = Math.min(backoff.capMs, backoff.baseMs * 2 ** exponent)
  return Math.round(step / 2 + random() * (step / 2))
}
