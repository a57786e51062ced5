// Thresholds for CI and cron: any breach makes `outbox status` exit 1, naming which one.
import {formatAge} from '../core/time.js'
import type {StatusReport} from './status.js'

export interface Thresholds {
  maxPending?: number
  /** seconds */
  maxAge?: number
  maxFailed?: number
  /** seconds */
  maxLatencyP99?: number
}

export interface Breach {
  threshold: 'max-pending' | 'max-age' | 'max-failed' | 'max-latency-p99'
  limit: number
  actual: number
  message: string
}

/** Strictly greater than the limit breaches: --max-failed 0 means "no failed event at all". */
export function checkThresholds(report: StatusReport, t: Thresholds): Breach[] {
  const out: Breach[] = []
  const check = (threshold: Breach['threshold'], limit: number | undefined, actual: number | null, show: (n: number) => string) => {
    if (limit === undefined || actual === null || actual <= limit) return
    // rounded for reading, unless that makes the two look equal (499.5s against 500s)
    const [a, l] = show(actual) === show(limit) ? [`${actual}s`, `${limit}s`] : [show(actual), show(limit)]
    out.push({threshold, limit, actual, message: `${threshold.replace('max-', '')} ${a} exceeds --${threshold} ${l}`})
  }
  check('max-pending', t.maxPending, report.pending, String)
  check('max-age', t.maxAge, report.oldestPendingAgeSeconds, duration)
  check('max-failed', t.maxFailed, report.failed, String)
  check('max-latency-p99', t.maxLatencyP99, report.latencySeconds.p99, duration)
  return out
}

/** formatAge, but 0 is "0s" (a limit of 0 seconds is no "0ms") */
function duration(seconds: number): string {
  return seconds === 0 ? '0s' : formatAge(seconds)
}
