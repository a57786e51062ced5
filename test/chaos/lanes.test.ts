// How many runs a chaos call puts side by side: from the CPU other processes use now (a short
// sample, not the load average that a chaos call just ended still weighs on), publish-first alone.
import {availableParallelism} from 'node:os'
import {describe, expect, it} from 'vitest'
import {busyCores, LANES, lanesFor} from '../../src/chaos/lanes.js'

const cores = availableParallelism()

describe('chaos lanes', () => {
  it('every lane on a quiet machine, fewer as other processes take the cores, one on a busy one', () => {
    expect(lanesFor('outbox', 16, 0)).toBe(LANES)
    expect(lanesFor('outbox', 16, cores / 4)).toBe(Math.max(1, Math.round(LANES * 0.75)))
    expect(lanesFor('outbox', 16, cores / 2)).toBe(Math.max(1, Math.round(LANES / 2)))
    expect(lanesFor('outbox', 16, cores)).toBe(1)
    expect(lanesFor('outbox', 1, 0)).toBe(1)
    expect(lanesFor('dual-write-publish-first', 16, 0)).toBe(1)
  })

  it('samples the cores busy now, in cores', async () => {
    const busy = await busyCores(100)
    expect(busy).toBeGreaterThanOrEqual(0)
    expect(busy).toBeLessThanOrEqual(cores)
  })
})
