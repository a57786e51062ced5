// One section at a time on something single-threaded that async callers share: SQLite's one
// connection behind a Db, an app's own connection a Consumer runs its transactions on, and a
// relay's claims (its loops take turns: Relay.turn).
import {poolWaitTimeout} from './errors.js'

export class Mutex {
  private tail: Promise<void> = Promise.resolve()
  /** sections queued or running */
  private depth = 0

  /**
   * A waiter gives up after waitMs (a transaction kept open that long, or a db.query() awaited
   * inside db.transaction(), which would otherwise wait on itself forever); Infinity: never.
   */
  constructor(private readonly waitMs: number) {}

  async run<T>(fn: () => Promise<T> | T): Promise<T> {
    const previous = this.tail
    let release!: () => void
    this.tail = new Promise((resolve) => (release = resolve))
    const leave = () => {
      this.depth--
      release()
    }
    // the common case, nobody ahead, takes no timer
    if (this.depth++ === 0 || this.waitMs === Infinity) await previous
    else await this.turn(previous, leave)
    try {
      return await fn()
    } finally {
      leave()
    }
  }

  /** Resolves when the sections ahead are done, or rejects after waitMs; those behind still wait for them. */
  private async turn(previous: Promise<void>, leave: () => void): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const gaveUp = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(poolWaitTimeout(this.waitMs)), this.waitMs)))
    try {
      await Promise.race([previous, gaveUp])
    } catch (error) {
      // our place in the queue is handed on only once the sections ahead of it are done
      void previous.then(leave)
      throw error
    } finally {
      clearTimeout(timer)
    }
  }
}
