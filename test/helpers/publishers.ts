// In-process publishers for relay tests: they record what they were given and answer as told.
import type {ClaimedEvent} from '../../src/relay/claim.js'
import type {Publisher, PublishResult} from '../../src/publishers/types.js'

export class RecordingPublisher implements Publisher {
  readonly name = 'recording'
  readonly sent: ClaimedEvent[] = []
  calls = 0

  constructor(private readonly answer: (event: ClaimedEvent) => PublishResult | Promise<PublishResult> = () => ({ok: true})) {}

  async publish(events: readonly ClaimedEvent[]): Promise<PublishResult[]> {
    this.calls++
    const results: PublishResult[] = []
    for (const e of events) {
      this.sent.push(e)
      results.push(await this.answer(e))
    }
    return results
  }

  /** how many times each id was sent */
  counts(): Map<string, number> {
    const m = new Map<string, number>()
    for (const e of this.sent) m.set(e.id, (m.get(e.id) ?? 0) + 1)
    return m
  }

  async close(): Promise<void> {}
}

/** A promise with its resolve exposed, to hold a publisher until the test lets it go. */
export function gate(): {promise: Promise<void>; open: () => void} {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return {promise, open}
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls until check() is true (or fails after timeoutMs); for waiting on real servers, not for timing. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/** A claimed event numbered n (0-99), as a relay hands it to a publisher. */
export function sample(n: number): ClaimedEvent {
  return {
    id: `0190c3c2-0000-7000-8000-0000000000${String(n).padStart(2, '0')}`,
    eventType: 'order.created',
    aggregateType: 'order',
    aggregateId: `order-${n}`,
    aggregateVersion: 1,
    payload: `{"n":${n}}`,
    headers: '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}',
    createdAt: new Date(),
    attempts: 1,
  }
}
