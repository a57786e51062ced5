// Between a broker client that pushes messages (or a pump that pulls them) and the loop's
// workers that ask for one at a time: a small queue with waiters, an end, and a failure.

export class Handoff<T> {
  private readonly items: T[] = []
  private readonly waiters: {resolve: (item: T | null) => void; reject: (error: unknown) => void}[] = []
  private ended = false
  private failure: unknown = undefined
  private spaceWaiter?: () => void

  get size(): number {
    return this.items.length
  }

  /** the items waiting to be taken, oldest first (a copy) */
  get pending(): readonly T[] {
    return [...this.items]
  }

  /** how many workers wait for an item right now */
  get waiting(): number {
    return this.waiters.length
  }

  /** false once ended: the item was not taken (give it back) */
  push(item: T): boolean {
    if (this.ended) return false
    const waiter = this.waiters.shift()
    if (waiter) waiter.resolve(item)
    else this.items.push(item)
    return true
  }

  next(): Promise<T | null> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    const item = this.items.shift()
    this.spaceWaiter?.()
    if (item !== undefined) return Promise.resolve(item)
    if (this.ended) return Promise.resolve(null)
    return new Promise((resolve, reject) => this.waiters.push({resolve, reject}))
  }

  /** Up to max items that wait now, from the head while accept says yes: waits for none. */
  take(max: number, accept: (item: T) => boolean): T[] {
    if (this.failure !== undefined) return []
    let n = 0
    while (n < max && n < this.items.length && accept(this.items[n])) n++
    const taken = this.items.splice(0, n)
    if (n > 0) this.spaceWaiter?.()
    return taken
  }

  /** For pumps: resolves once fewer than `limit` items wait to be taken (or the handoff ended). */
  async space(limit: number): Promise<void> {
    while (!this.ended && this.failure === undefined && this.items.length >= limit) await new Promise<void>((resolve) => (this.spaceWaiter = resolve))
    this.spaceWaiter = undefined
  }

  /** No more items: waiting workers get null; returns the items nobody took, to give back. */
  end(): T[] {
    this.ended = true
    for (const waiter of this.waiters.splice(0)) waiter.resolve(null)
    this.spaceWaiter?.()
    return this.items.splice(0)
  }

  /** The source broke: waiting and later workers get the error. */
  fail(error: unknown): void {
    if (this.ended || this.failure !== undefined) return
    this.failure = error
    for (const waiter of this.waiters.splice(0)) waiter.reject(error)
    this.spaceWaiter?.()
  }

  get isEnded(): boolean {
    return this.ended
  }
}
