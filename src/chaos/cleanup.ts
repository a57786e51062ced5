// Interrupted (Ctrl-C, SIGTERM): the run in progress may be anywhere, creating its scratch
// tables, declaring its broker objects, with workers alive or behind a fault proxy. Killing the
// workers and dropping at once would race the setup step still running (a table or a queue
// made after the drop stays behind), so the run is let finish the step it is in: the signal is
// checked between steps and its own finally drops what it made. Bounded, in case a step hangs
// on an unreachable server; every cleanup still registered runs then anyway.
import type {ChaosSession} from './session.js'

/** the longest wait for the run in progress to reach its finally (a step bounded by a connect timeout, 5-10 s) */
const SETTLE_MS = 15_000

/** The run was stopped between two of its steps. */
export class RunAbandoned extends Error {
  constructor() {
    super('chaos interrupted')
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RunAbandoned()
}

/** SIGKILLs every worker, waits (bounded) for `run` to settle, then runs the cleanups registered. */
export async function abandonRun(session: ChaosSession, run: Promise<unknown> | undefined, cleanups: Iterable<() => Promise<void>>): Promise<void> {
  session.workers.kill()
  if (run) {
    let timer: NodeJS.Timeout | undefined
    const bounded = new Promise<void>((resolve) => (timer = setTimeout(resolve, SETTLE_MS)))
    await Promise.race([run.then(() => {}, () => {}), bounded])
    clearTimeout(timer)
  }
  // a worker its run spawned before it saw the signal
  session.workers.kill()
  await Promise.all([...cleanups].map((cleanup) => cleanup().catch(() => {})))
}
