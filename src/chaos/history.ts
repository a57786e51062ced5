// The history of one chaos run, Jepsen-style: every process's operations as invoke, then ok,
// fail or unknown (the process died before it could say), beside what the harness did to the
// processes (spawn, SIGKILL, exit) and what the database recorded (an event's created_at and its
// publish mark). `--report` draws it (src/render/chaos-html.ts); the invariants stay the
// database's (invariants.ts): the history is the picture that explains a violation.

/** An operation a worker runs; `business` is the producer's transaction (business rows and events). */
export type Operation = 'business' | 'publish' | 'deliver'
export type Outcome = 'invoke' | 'ok' | 'fail' | 'unknown'
export type Lifecycle = 'spawn' | 'kill' | 'exit'

export interface HistoryEntry {
  /** ms since the run started (one machine, one clock: workers stamp Date.now()) */
  at: number
  /** producer, relay#1, consumer, harness, database */
  process: string
  /** the OS process: a restarted worker is a new pid on the same lane */
  pid?: number
  // created, published: the database's created_at and published_at of an event
  type: Outcome | Lifecycle | 'created' | 'published'
  op?: Operation
  /** the events the operation touched */
  ids?: string[]
  /** the business op number, the failpoint step, an error, a consumer outcome */
  detail?: string
}

/** What a worker prints: one line, `h` and the JSON of an entry without its lane. */
export const HISTORY_PREFIX = 'h '

export type WorkerEntry = Omit<HistoryEntry, 'at' | 'process' | 'pid'> & {t: number}

export function historyLine(entry: Omit<WorkerEntry, 't'>): string {
  return HISTORY_PREFIX + JSON.stringify({...entry, t: Date.now()})
}

/** How a worker notes an operation: a line on stdout when the run records a history, else nothing. */
export type Note = (entry: Omit<WorkerEntry, 't'>) => void

/** Whether `outcome` ends `invoke`: the same pid and operation, and the same business op or the same events. */
export function endsInvocation(invoke: HistoryEntry, outcome: HistoryEntry): boolean {
  if (outcome.pid !== invoke.pid || outcome.op !== invoke.op) return false
  if (!(outcome.type === 'ok' || outcome.type === 'fail' || outcome.type === 'unknown')) return false
  // a failed business op says why after its number: "op 3: connection reset"
  if (invoke.op === 'business') return (outcome.detail ?? '').split(':')[0] === invoke.detail
  const ids = new Set(invoke.ids ?? [])
  return (outcome.ids ?? []).some((id) => ids.has(id))
}

/**
 * Closes what a death left open: an operation invoked by a pid that exited before its ok or
 * fail is `unknown` at the moment of the exit (did the COMMIT happen? The database says).
 */
export function closeOpenOperations(history: HistoryEntry[]): HistoryEntry[] {
  const open = new Set<HistoryEntry>()
  const closed: HistoryEntry[] = []
  for (const e of [...history].sort((a, b) => a.at - b.at)) {
    closed.push(e)
    if (e.type === 'invoke') open.add(e)
    else if (e.type === 'ok' || e.type === 'fail') {
      const invoke = [...open].find((o) => endsInvocation(o, e))
      if (invoke) open.delete(invoke)
    } else if (e.type === 'exit' || e.type === 'kill') {
      for (const o of open) {
        if (o.pid !== e.pid) continue
        closed.push({...o, at: e.at, type: 'unknown'})
        open.delete(o)
      }
    }
  }
  return closed
}
