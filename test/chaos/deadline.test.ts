// When a chaos run is given up on: --run-timeout after its last progress (the first counted from
// the producer's first op, not from the run's start), and after three of them in all.
import {afterEach, describe, expect, it, vi} from 'vitest'
import {Deadline, LONGEST_RUNS} from '../../src/chaos/deadline.js'

afterEach(() => vi.restoreAllMocks())

describe('a chaos run\'s deadline', () => {
  it('counts from the start until the run shows progress, then from its last progress, never past the cap', () => {
    const clock = vi.spyOn(Date, 'now').mockReturnValue(0)
    const deadline = new Deadline(0, 30_000)
    clock.mockReturnValue(29_000)
    expect(deadline.passed()).toBe(false)
    // the workers took 29 s to start: the producer's first op restarts the clock
    deadline.see('op 0')
    clock.mockReturnValue(58_000)
    expect(deadline.passed()).toBe(false)
    deadline.see('op 0') // the same: no progress
    clock.mockReturnValue(59_001)
    expect(deadline.passed()).toBe(true)
    expect(deadline.why()).toBe('no progress for 30 s')
  })

  it('gives up on a run still moving after LONGEST_RUNS timeouts from its start', () => {
    const clock = vi.spyOn(Date, 'now').mockReturnValue(0)
    const deadline = new Deadline(0, 10_000)
    for (let t = 0; t <= LONGEST_RUNS * 10_000; t += 5000) {
      clock.mockReturnValue(t)
      deadline.see(`pending ${t}`)
    }
    clock.mockReturnValue(LONGEST_RUNS * 10_000 + 1)
    expect(deadline.passed()).toBe(true)
    expect(deadline.why()).toBe(`still going after ${LONGEST_RUNS * 10} s`)
  })

  it('a worker waiting for a pool process holds the clock back, never past the cap', () => {
    const clock = vi.spyOn(Date, 'now').mockReturnValue(0)
    const deadline = new Deadline(0, 30_000)
    clock.mockReturnValue(40_000)
    deadline.waitingForProcess() // the pool loads a few at a time: 40 s in, still no process
    clock.mockReturnValue(69_000)
    expect(deadline.passed()).toBe(false)
    clock.mockReturnValue(70_001)
    expect(deadline.passed()).toBe(true)
    expect(deadline.why()).toBe('no progress for 30 s')
    clock.mockReturnValue(89_000)
    deadline.waitingForProcess()
    clock.mockReturnValue(LONGEST_RUNS * 30_000 + 1)
    expect(deadline.passed()).toBe(true)
  })
})
