// Named failpoints: OUTBOX_FAILPOINTS="relay.after-send=kill" (or "=kill@3" for the 3rd hit).
// A process that hits an armed failpoint SIGKILLs itself: no cleanup, no finally, a crash.
// Unarmed, a failpoint costs one Map lookup.
import {writeSync} from 'node:fs'

/** The steps `outbox chaos` kills at (DESIGN.md's table), in pipeline order. */
export const STEPS = [
  'producer.before-commit',
  'producer.after-commit',
  'relay.after-claim',
  'relay.mid-batch',
  'relay.after-send',
  'relay.after-mark',
  'consumer.before-commit',
  'consumer.after-commit',
] as const

/** Failpoints outside the chaos pipeline, exercised by their own tests. */
export const OTHER_FAILPOINTS = [
  // outbox archive: a batch copied into the archive table, not yet deleted, not committed
  'archive.mid-batch',
  // outbox archive on a partitioned outbox: a whole partition taken out, not yet dropped
  'archive.partition-detached',
  // ... and its rows copied into the archive table, the drop not yet run (not committed)
  'archive.partition-copied',
  // ... and about to drop the retired table (MySQL: the table lock before it committed the copy)
  'archive.partition-drop',
] as const

export type Step = (typeof STEPS)[number] | (typeof OTHER_FAILPOINTS)[number]
export type ChaosStep = (typeof STEPS)[number]

interface Armed {
  action: 'kill'
  /** fire on this hit (1-based) */
  hit: number
  seen: number
}

function parse(spec: string | undefined): Map<string, Armed> {
  const armed = new Map<string, Armed>()
  if (!spec) return armed
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([a-z]+\.[a-z-]+)=(kill)(?:@(\d+))?$/.exec(part)
    if (!m) throw new Error(`OUTBOX_FAILPOINTS: cannot parse ${JSON.stringify(part)} (expected step=kill or step=kill@N)`)
    armed.set(m[1], {action: 'kill', hit: m[3] ? Number(m[3]) : 1, seen: 0})
  }
  return armed
}

let armed = parse(process.env.OUTBOX_FAILPOINTS)

/** Re-read the spec (tests); pass undefined to disarm everything. */
export function armFailpoints(spec: string | undefined): void {
  armed = parse(spec)
}

/** Call at a named step. When armed and due, the process dies here by SIGKILL. */
export function failpoint(step: Step): void {
  if (armed.size === 0) return
  const point = armed.get(step)
  if (!point) return
  point.seen++
  if (point.seen === point.hit) {
    // Tell the harness which step fired (fd 2 is unbuffered for a sync write), then die.
    try {
      writeSync(2, `outbox-failpoint ${step}\n`)
    } catch {}
    process.kill(process.pid, 'SIGKILL')
  }
}

