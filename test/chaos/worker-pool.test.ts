// The harness's worker pool (src/chaos/workers/worker-process.ts) on real processes (SQLite):
// a worker that finished or was stopped serves a later run, a worker killed at its step is
// gone and its restart is another process, and runs side by side (lanes) report in plan order.
import {existsSync} from 'node:fs'
import {describe, expect, it} from 'vitest'
import type {runChaos as RunChaos} from '../../src/chaos/runner.js'

// the compiled library, so the workers run as compiled code (from sources each one loads tsx)
const compiled = new URL('../../dist/src/chaos/runner.js', import.meta.url)
if (!existsSync(compiled)) throw new Error('dist/ is missing: run `npm run build` first')
const {runChaos} = (await import(compiled.href)) as {runChaos: typeof RunChaos}

const pidsOf = (history: {process: string; pid?: number; type: string}[] | undefined, type: string) =>
  (history ?? []).filter((h) => h.type === type && h.pid !== undefined).map((h) => ({process: h.process, pid: h.pid!}))

describe('outbox chaos worker pool', () => {
  it('reuses processes across runs, never a killed one, and reports runs in plan order whatever lane ran them', {timeout: 120_000}, async () => {
    const steps = ['relay.after-send', 'consumer.after-commit', 'producer.before-commit'] as const
    const report = await runChaos({steps: [...steps], scenarios: [], seed: 5, history: true, lanes: 2})
    expect(report.runs.map((r) => r.case)).toEqual([...steps])
    expect(report.totals).toMatchObject({runs: 3, kills: 3, violations: 0, notExercised: 0})
    const spawns = report.runs.map((r) => pidsOf(r.history, 'spawn'))
    const kills = report.runs.map((r) => pidsOf(r.history, 'kill'))
    for (const [i, killed] of kills.entries()) {
      expect(killed).toHaveLength(1)
      // the restart of the killed worker runs in another process
      const again = spawns[i].filter((s) => s.process === killed[0].process)
      expect(again).toHaveLength(2)
      expect(again[1].pid).not.toBe(killed[0].pid)
      // the armed assignment was the killed process's only one in its run: nothing landed on it once dead
      expect(spawns[i].filter((s) => s.pid === killed[0].pid)).toEqual([again[0]])
    }
    // fewer processes than assignments: workers that ended gracefully took later assignments
    const assignments = spawns.flat()
    expect(new Set(assignments.map((s) => s.pid)).size).toBeLessThan(assignments.length)
    expect(report.ok).toBe(true)
  })
})
