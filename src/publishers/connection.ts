// One broker connection, opened on first use and again after it is lost: a failed or
// dropped connection is forgotten, so the next publish reconnects (the relay's backoff paces it).
import {redactSecrets} from '../core/redact.js'

export class LazyConnection<T> {
  private opening?: Promise<T>
  private current?: T

  constructor(
    private readonly open: () => Promise<T>,
    private readonly dispose: (connection: T) => Promise<void>,
  ) {}

  get(): Promise<T> {
    if (!this.opening) {
      const opening = this.open().then(
        (connection) => {
          if (this.opening === opening) this.current = connection
          return connection
        },
        (error) => {
          if (this.opening === opening) this.opening = undefined
          throw error
        },
      )
      this.opening = opening
    }
    return this.opening
  }

  /**
   * Forget the connection (it was lost); the next get() opens a new one. Given the connection
   * an event came from, a late event of an old connection leaves a newer one alone.
   */
  reset(which?: T): void {
    if (which !== undefined && which !== this.current) return
    const stale = this.opening
    this.opening = undefined
    this.current = undefined
    void stale?.then((c) => this.dispose(c)).catch(() => {})
  }

  async close(): Promise<void> {
    const open = this.opening
    this.opening = undefined
    this.current = undefined
    if (!open) return
    try {
      await this.dispose(await open)
    } catch {}
  }
}

/** An error's message without the broker URL's password. */
export function brokerError(error: unknown, url: string): string {
  const e = error as {message?: string; code?: string}
  const text = e?.message || e?.code || String(error)
  return redactSecrets(text, url)
}

/** Whether the promise settled within ms ('late' when not; it goes on in the background). */
export async function within(promise: Promise<unknown>, ms: number): Promise<'settled' | 'late'> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)))
  const settled = promise.then(
    () => 'settled' as const,
    () => 'settled' as const,
  )
  return Promise.race([settled, late]).finally(() => clearTimeout(timer))
}
