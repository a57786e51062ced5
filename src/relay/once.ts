// What `relay --once` says when it ends: an exit code a CI job can trust (0 only when nothing it
// should have delivered is left, an outage included) and one line with how many and why.
import {SIGNAL_EXIT, type StopSignal} from '../core/errors.js'
import {redactUrl} from '../core/redact.js'
import type {Undelivered} from './backlog.js'
import type {DrainResult} from './relay.js'

export interface OnceVerdict {
  /** 0 nothing left, 1 events left pending or failed, 130/143 stopped by SIGINT/SIGTERM with events left */
  exitCode: number
  /** how many events are left and why, for stderr (after "outbox: "); none when the exit code is 0 */
  reason?: string
}

export interface OnceOutcome {
  drain: DrainResult
  left: Undelivered
  /** failed events in the table (they wait for `outbox replay --failed`) */
  failed: number
  /** the signal that stopped the run early, if one did */
  stopped?: StopSignal
  /** where events go, to name it (password masked) */
  target?: string
}

export function onceVerdict({drain, left, failed, stopped, target}: OnceOutcome): OnceVerdict {
  const pending = left.total
  if (pending === 0 && failed === 0) return {exitCode: 0}
  if (stopped && pending > 0) {
    return {exitCode: SIGNAL_EXIT[stopped], reason: `stopped by a signal after the batch in flight; ${pending} event(s) still pending. Run it again to go on`}
  }
  const counts = pending > 0 ? `${pending} event(s) still pending${failed > 0 ? `, ${failed} failed` : ''}` : `${failed} event(s) failed`
  const see = failed > 0 ? 'See: outbox status, outbox failed' : 'See: outbox status'
  return {exitCode: 1, reason: `${counts}: ${why(drain, left, target)}. ${see}`}
}

function why(drain: DrainResult, left: Undelivered, target: string | undefined): string {
  if (drain.error !== undefined && drain.outage) {
    const broker = target ? `the broker at ${redactUrl(target)}` : 'the broker'
    return `${broker} took none of the last batch (${drain.error}); their attempts were given back`
  }
  if (drain.error !== undefined) return `publishing failed (${drain.error})${left.total > 0 ? '; they are retried after a backoff' : ''}`
  if (left.waiting > 0) return 'waiting out the backoff of an earlier attempt'
  if (left.total > 0) return 'not claimed by this run (a lease that lapsed meanwhile, or queued behind an older event of its aggregate)'
  return 'they failed earlier; outbox replay --failed sends them again'
}
