// How a relay loop's claims grow and shrink (src/relay/batch-size.ts): pure arithmetic.
import {describe, expect, it} from 'vitest'
import {BatchSize, maxBatchFor} from '../../src/relay/batch-size.js'

const events = (n: number, chars = 10) => Array.from({length: n}, () => ({payload: 'x'.repeat(chars)}))

describe('BatchSize', () => {
  it('doubles while claims come back full, up to the cap, and goes back to the start after a short one', () => {
    const size = new BatchSize(100, 1000, 30_000)
    const seen = [size.next]
    for (let i = 0; i < 5; i++) {
      size.observe(size.next, events(size.next), 10)
      seen.push(size.next)
    }
    expect(seen).toEqual([100, 200, 400, 800, 1000, 1000])
    size.observe(1000, events(999), 10)
    expect(size.next).toBe(100)
  })

  it('does not grow when twice the batch would take over a quarter of the lease, and halves past half of it', () => {
    const size = new BatchSize(10, 1000, 1000)
    size.observe(10, events(10), 126) // doubled: 252 ms > 250 ms
    expect(size.next).toBe(10)
    size.observe(10, events(10), 125)
    expect(size.next).toBe(20)
    size.observe(20, events(20), 501)
    expect(size.next).toBe(10)
  })

  it('does not grow past 16 MiB of payload text, nor on a claim sent before the last change', () => {
    const size = new BatchSize(4, 64, 30_000)
    size.observe(4, events(4, 3 * 1024 * 1024), 1) // doubled: 24 MiB
    expect(size.next).toBe(4)
    size.observe(4, events(4), 1)
    expect(size.next).toBe(8)
    size.observe(4, events(4), 1) // an older, smaller claim coming back full changes nothing
    expect(size.next).toBe(8)
  })

  it('maxBatch defaults to ten times batch, at most 1000, never below batch', () => {
    expect(maxBatchFor(100, undefined)).toBe(1000)
    expect(maxBatchFor(3, undefined)).toBe(30)
    expect(maxBatchFor(5000, undefined)).toBe(5000)
    expect(maxBatchFor(100, 100)).toBe(100)
    expect(maxBatchFor(100, 250)).toBe(250)
  })
})
