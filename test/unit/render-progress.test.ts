// render/progress: the progress line the ops commands redraw on a terminal while batches run.
import {describe, expect, it} from 'vitest'

describe('progress on a terminal', () => {
  it('redraws ten times a second at most, however fast batches come back', async () => {
    const {progressLine} = await import('../../src/render/progress.js')
    const writes: string[] = []
    const stream = {isTTY: true, write: (s: string) => writes.push(s)} as unknown as NodeJS.WriteStream
    const line = progressLine('replayed', 1000, stream)
    for (let i = 1; i <= 500; i++) line.update({seen: i * 2, changed: i * 2, batches: i})
    expect(writes.length).toBeLessThan(5) // one, unless the loop itself took over 100 ms
    line.done()
    expect(writes.at(-1)).toBe('\r\x1b[K')
  })
})
