// --iterations on real worker processes (SQLite): every case runs that many times, a step's
// iterations are killed at different passes, and the report counts them per case.
import {existsSync} from 'node:fs'
import {describe, expect, it} from 'vitest'
import type {runChaos as RunChaos} from '../../src/chaos/runner.js'

// the compiled library, so the workers run as compiled code (from sources each one loads tsx)
const compiled = new URL('../../dist/src/chaos/runner.js', import.meta.url)
if (!existsSync(compiled)) throw new Error('dist/ is missing: run `npm run build` first')
const {runChaos} = (await import(compiled.href)) as {runChaos: typeof RunChaos}

describe('outbox chaos --iterations', () => {
  it('runs every step and every scenario that many times, each iteration of a step killed at another pass', {timeout: 120_000}, async () => {
    const report = await runChaos({steps: ['producer.after-commit', 'consumer.before-commit'], scenarios: ['poison'], iterations: 2, seed: 11})
    expect(report.runs.map((r) => `${r.case} #${r.iteration}`)).toEqual([
      'producer.after-commit #1',
      'producer.after-commit #2',
      'consumer.before-commit #1',
      'consumer.before-commit #2',
      'poison #1',
      'poison #2',
    ])
    expect(report.cases.map((c) => [c.case, c.runs, c.verdict])).toEqual([
      ['producer.after-commit', 2, 'pass'],
      ['consumer.before-commit', 2, 'pass'],
      ['poison', 2, 'pass'],
    ])
    expect(report.totals).toMatchObject({runs: 6, kills: 4, violations: 0, notExercised: 0})
    for (const step of ['producer.after-commit', 'consumer.before-commit']) {
      const [one, two] = report.runs.filter((r) => r.case === step).map((r) => r.armed)
      expect(one).toHaveLength(1)
      expect(two).not.toEqual(one)
    }
    expect(report.ok).toBe(true)
  })
})
