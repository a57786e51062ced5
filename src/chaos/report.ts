// What `outbox chaos` reports: one RunResult per run, one CaseSummary per step or scenario,
// and the ChaosReport around them (the JSON, the table and the JUnit file are made from it).
import type {DialectName} from '../../dialects/index.js'
import type {HistoryEntry} from './history.js'
import type {Observed, Violation} from './invariants.js'
import type {ConsumerMode, Strategy} from './strategies.js'

export interface ChaosProgress {
  index: number
  total: number
  case: string
  iteration: number
  /** undefined when the run is starting */
  run?: RunResult
}

export type Verdict = 'pass' | 'fail' | 'not exercised'

export interface KillRecord {
  worker: string
  step: string
  signal: string
  /** died by SIGKILL at the armed step */
  ok: boolean
}

export interface RunResult extends Observed {
  case: string
  kind: 'step' | 'scenario'
  iteration: number
  /** the armed failpoints, e.g. relay.after-send=kill@2 */
  armed: string[]
  kills: KillRecord[]
  exercised: boolean
  /** why it was not exercised */
  note?: string
  violations: Violation[]
  verdict: Verdict
  ms: number
  /** with `history` (--report): every process's operations, the harness's kills and the database's commits and marks */
  history?: HistoryEntry[]
}

export interface CaseSummary extends Observed {
  case: string
  kind: 'step' | 'scenario'
  runs: number
  kills: number
  exercised: number
  verdict: Verdict
  violations: Violation[]
  notes: string[]
}

export interface ChaosReport {
  ok: boolean
  seed: number
  dialect: DialectName
  /** the URL with its password masked; "sqlite (temporary file)" by default */
  database: string
  broker: string
  strategy: Strategy
  consumer: ConsumerMode
  scenario: string
  relays: number
  iterations: number
  cases: CaseSummary[]
  runs: RunResult[]
  totals: {runs: number; kills: number; violations: number; notExercised: number}
  ms: number
}

/** The observations of a run that never started (no relay to kill under a dual write). */
export const NOTHING_OBSERVED: Observed = {
  committed: 0,
  aggregates: 0,
  events: 0,
  deliveries: 0,
  duplicateDeliveries: 0,
  duplicateEffects: 0,
  lost: 0,
  phantom: 0,
  stuck: 0,
  stale: 0,
  failed: 0,
  maxAttempts: 0,
}

export function verdictOf(violations: readonly Violation[], exercised: boolean): Verdict {
  return violations.length ? 'fail' : exercised ? 'pass' : 'not exercised'
}

const killsAtStep = (r: RunResult) => r.kills.filter((k) => k.ok).length

/** One row per case, in the order the runs came. */
export function summarise(runs: RunResult[]): CaseSummary[] {
  const byCase = new Map<string, RunResult[]>()
  for (const r of runs) byCase.set(r.case, [...(byCase.get(r.case) ?? []), r])
  return [...byCase].map(([name, rs]) => {
    const sum = (f: (r: RunResult) => number) => rs.reduce((n, r) => n + f(r), 0)
    const violations = rs.flatMap((r) => r.violations)
    const notes = [...new Set(rs.map((r) => r.note).filter((n): n is string => !!n))]
    return {
      case: name,
      kind: rs[0].kind,
      runs: rs.length,
      kills: sum(killsAtStep),
      exercised: rs.filter((r) => r.exercised).length,
      committed: sum((r) => r.committed),
      aggregates: sum((r) => r.aggregates),
      events: sum((r) => r.events),
      deliveries: sum((r) => r.deliveries),
      duplicateDeliveries: sum((r) => r.duplicateDeliveries),
      duplicateEffects: sum((r) => r.duplicateEffects),
      lost: sum((r) => r.lost),
      phantom: sum((r) => r.phantom),
      stuck: sum((r) => r.stuck),
      stale: sum((r) => r.stale),
      failed: sum((r) => r.failed),
      maxAttempts: Math.max(0, ...rs.map((r) => r.maxAttempts)),
      verdict: verdictOf(violations, rs.every((r) => r.exercised)),
      violations,
      notes,
    }
  })
}

/** The totals line: kills seen at their armed step, violations, runs not exercised. */
export function totalsOf(runs: RunResult[]): ChaosReport['totals'] {
  return {
    runs: runs.length,
    kills: runs.reduce((n, r) => n + killsAtStep(r), 0),
    violations: runs.reduce((n, r) => n + r.violations.length, 0),
    notExercised: runs.filter((r) => !r.exercised).length,
  }
}
