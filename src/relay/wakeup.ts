// Interruptible sleeps: idle relay loops wait for the poll interval, a NOTIFY, or stop().
// A wake-up that arrives while no loop is asleep is remembered, so a NOTIFY sent between an
// empty claim and the sleep after it is not lost until the next poll.
export class Wakeup {
  private readonly sleepers = new Set<() => void>()
  private pending = false

  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.sleepers.add(done)
    })
  }

  wakeAll(): void {
    if (this.sleepers.size === 0) this.pending = true
    for (const wake of [...this.sleepers]) wake()
  }
}
