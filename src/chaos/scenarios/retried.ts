// Whether an event of the run was claimed again after an attempt that counted (attempts >= 2):
// what broker-down, hang and slow-ack end their fault on, instead of a fixed window that a slow
// relay on a loaded machine can sleep through. Read from the watch loop's ticks, one query at a
// time; once seen, it stays seen (attempts are given back only on an outage, which is over by then).
import type {RunUnderTest} from './types.js'

/** Polls the run's outbox from a stage's onTick; `seen()` says whether an event reached 2 attempts. */
export function retriedWatch(run: Pick<RunUnderTest, 'highestAttempts'>): {seen(): boolean} {
  let seen = false
  let asking = false
  return {
    seen() {
      if (!seen && !asking) {
        asking = true
        run.highestAttempts().then(
          (n) => {
            asking = false
            if (n >= 2) seen = true
          },
          () => {
            asking = false // asked again on the next tick
          },
        )
      }
      return seen
    },
  }
}

/**
 * A fault that waits for its condition still ends after this long (a relay that never comes
 * back): the run then drains and its check says "not exercised". Well within --run-timeout.
 */
export const FAULT_LIMIT_MS = 10_000
