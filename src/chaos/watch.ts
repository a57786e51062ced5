// The watch loop of one run: start the consumer, the relays and the producer; every tick, see
// to dead workers (a kill at the armed step is restarted without failpoints, anything else is
// a harness violation), drive the fault's stage, and end once everything drained and stayed quiet.
import type {Run} from './run.js'
import type {Stage} from './scenarios/types.js'
import {Deadline} from './deadline.js'
import {countPending, unhandledCount} from './tables.js'
import {classifyExit} from './workers/worker-process.js'

const TICK_MS = 40
/**
 * How long a drained run must stay quiet: a kill right after the last mark must not be missed,
 * and a real broker's resends of events already handled (relay.after-send) must have come
 * through. (A redelivery after a consumer kill is waited for by unhandledCount: no ack, no drain.)
 */
const QUIET_MS = {loopback: 200, realBroker: 2000}
/** on the loopback broker, once every armed failpoint has fired: no kill is left to miss */
const QUIET_FIRED_MS = 2 * TICK_MS

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function watch(run: Run, stage: Stage): Promise<void> {
  const s = run.settings
  let producerDone = false
  let drained = false
  let aborted = false
  const deadline = new Deadline(run.started, s.runTimeoutMs)
  try {
    await stage.start?.()
    run.spawn('consumer')
    for (let i = 1; i <= run.relays; i++) run.spawn(`relay#${i}`)
    await stage.beforeProducer?.()
    run.spawn('producer')

    let settledSince = 0
    while (!aborted) {
      await sleep(TICK_MS)
      if (s.signal?.aborted) throw new Error('chaos interrupted')
      for (const [name, w] of run.workers) {
        if (w.alive || (name === 'producer' && producerDone)) continue
        const exit = w.exit!
        const kind = classifyExit(exit, w.armed)
        settledSince = 0
        if (kind === 'finished' && name === 'producer' && w.done) {
          producerDone = true
          continue
        }
        if (kind === 'killed-at-step' || kind === 'killed-elsewhere') {
          run.kills.push({worker: name, step: exit.failpoint ?? '(none)', signal: exit.signal ?? '', ok: kind === 'killed-at-step'})
          if (kind === 'killed-elsewhere') run.harness(`${name} died by SIGKILL ${exit.failpoint ? `at ${exit.failpoint}` : 'without a failpoint line'}, not at the armed ${w.armed?.step ?? '(none)'}`)
          // recovery: the same worker again, without failpoints
          if (name === 'consumer') run.loopback?.requeueUnacked()
          run.spawn(name, name === 'producer' ? {opStart: (w.lastOp ?? -1) + 1} : {}, null)
          continue
        }
        run.harness(`${name} exited unexpectedly (${exit.signal ?? `code ${exit.code}`}): ${w.stderrTail()}`)
        aborted = true
      }
      if (aborted) break
      const lastOp = run.workers.get('producer')?.lastOp
      // one picture of the run a tick (two that alternate would be progress on every tick)
      const progress = `${lastOp} ${run.kills.length} ${run.loopback?.stats.acked}`
      stage.onTick?.()
      if (!producerDone) {
        if (lastOp !== undefined) deadline.see(progress)
        if ([...run.workers.values()].some((w) => w.alive && w.pid === undefined)) deadline.waitingForProcess()
        if (deadline.passed()) break
        continue
      }
      const pending = await countPending(s.db, run.tables)
      // a real broker's consumer: its acks, read from the run's tables
      const unhandled = pending === 0 && !run.loopback ? await unhandledCount(s.db, run.tables) : undefined
      deadline.see(`${progress} ${pending} pending ${unhandled} unhandled`)
      stage.onDraining?.(pending)
      const quiet = pending === 0 && !stage.settling?.() && (run.loopback ? run.loopback.idle() : unhandled === 0)
      if (!quiet) settledSince = 0
      else if (!settledSince) settledSince = Date.now()
      else if (Date.now() - settledSince >= quietMs(run)) {
        drained = true
        break
      }
      if (deadline.passed()) break
    }
  } finally {
    await run.stop()
  }
  if (!drained && !aborted) run.harness(`did not drain: ${deadline.why()}`)
}

/** How long the drained run must stay quiet. */
function quietMs(run: Run): number {
  if (!run.loopback) return QUIET_MS.realBroker
  const unfired = [...run.failpoints.keys()].some((name) => !run.kills.some((k) => k.worker === name && k.ok))
  return unfired ? QUIET_MS.loopback : QUIET_FIRED_MS
}
