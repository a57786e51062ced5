// When the watch loop gives up on a run that has not drained: after --run-timeout without
// progress, and after a few of them in all, whatever it was doing.

/** a run still moving is given up on after this many --run-timeout from its start */
export const LONGEST_RUNS = 3

/**
 * When a run is given up on: --run-timeout after its last sign of progress (the producer's first
 * op, then its next ones, a kill, an event published, a message acked by the consumer), never
 * past LONGEST_RUNS times --run-timeout from its start. The workers' start-up on a loaded machine
 * (a pool still warming: 10 s and more at a load of 15 on 2 cores) and a slow but moving drain
 * (a consumer at 0.5 s a message there) are the machine's time, no reason to fail a run.
 */
export class Deadline {
  private last = ''
  private at: number
  private readonly cap: number

  constructor(
    started: number,
    private readonly timeoutMs: number,
  ) {
    this.at = started + timeoutMs
    this.cap = started + LONGEST_RUNS * timeoutMs
  }

  /** what the run has got to: any change is progress */
  see(progress: string): void {
    if (progress === this.last) return
    this.last = progress
    this.extend()
  }

  /**
   * A worker of the run still waits for a pool process (the pool loads a few at a time): the
   * machine's time, like any start-up, counted as progress (never past the cap).
   */
  waitingForProcess(): void {
    this.extend()
  }

  /** --run-timeout from now, never past the cap */
  private extend(): void {
    this.at = Math.min(Date.now() + this.timeoutMs, this.cap)
  }

  passed(): boolean {
    return Date.now() > this.at
  }

  why(): string {
    const s = (ms: number) => `${Math.round(ms / 1000)} s`
    return this.at >= this.cap ? `still going after ${s(LONGEST_RUNS * this.timeoutMs)}` : `no progress for ${s(this.timeoutMs)}`
  }
}
