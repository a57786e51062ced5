// Harness side of the worker processes: a pool of real Node processes started ahead of need
// (start-up and imports paid while other runs go on, not on a run's clock), each given one
// assignment at a time (worker.ts). A worker that finished or was stopped goes back to the pool;
// one that died (a SIGKILL at its armed step) is gone, and the pool starts another. Each
// assignment is a WorkerProcess: its stdout protocol, and a real SIGKILL at the armed step told
// from any other death.
import {spawn, type ChildProcess} from 'node:child_process'
import {existsSync} from 'node:fs'
import {availableParallelism} from 'node:os'
import {fileURLToPath} from 'node:url'
import type {Step} from '../../core/failpoints.js'
import {HISTORY_PREFIX, type WorkerEntry} from '../history.js'
import type {Assignment, WorkerConfig} from './worker.js'

export interface WorkerExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** the step named by the "outbox-failpoint <step>" line, if the worker printed one */
  failpoint?: string
  /** Date.now() when the process was seen to exit (or its assignment to end) */
  at: number
}

type Armed = {step: Step; hit: number}
/** an assignment waiting for a free process */
type Waiter = {producer: boolean; use(p: Pooled): void; fail(p: Pooled, exit: Omit<WorkerExit, 'failpoint'>): void}

function workerScript(): {script: string; execArgv: string[]} {
  // the build's one-file bundle of worker.js (scripts/bundle-worker.js): a third less start-up CPU
  for (const file of ['./worker.bundle.js', './worker.js']) {
    const js = fileURLToPath(new URL(file, import.meta.url))
    if (existsSync(js)) return {script: js, execArgv: []}
  }
  // running from sources (bin/dev.js, vitest): the worker is TypeScript, run it through tsx
  return {script: fileURLToPath(new URL('./worker.ts', import.meta.url)), execArgv: ['--import', 'tsx']}
}

/** One pooled process: idle, or running one assignment. */
class Pooled {
  readonly child: ChildProcess
  idle = false
  /** said "idle" once: started and loaded; a process that dies before that failed to start */
  started = false
  /** stderr before the first assignment: why it failed to start */
  bootStderr = ''
  current?: WorkerProcess
  /** Kysely is loaded: started for producers, or has run one (worker.ts's preload leaves it out otherwise) */
  producer: boolean
  private stdoutBuffer = ''

  constructor(preloadUrl: string | undefined, forProducers: boolean, onExit: (p: Pooled, exit: Omit<WorkerExit, 'failpoint'>) => void, onIdle: (p: Pooled) => void) {
    const {script, execArgv} = workerScript()
    const env: NodeJS.ProcessEnv = {...process.env}
    delete env.OUTBOX_FAILPOINTS // armed per assignment, never at start
    if (preloadUrl) env.OUTBOX_CHAOS_PRELOAD_URL = preloadUrl
    this.producer = forProducers
    delete env.OUTBOX_CHAOS_PRELOAD_KYSELY
    if (forProducers) env.OUTBOX_CHAOS_PRELOAD_KYSELY = '1'
    this.child = spawn(process.execPath, [...execArgv, script], {env, stdio: ['pipe', 'pipe', 'pipe']})
    this.child.stdin!.on('error', () => {}) // a worker that died: its death is reported by 'exit'
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.onStdout(chunk, onIdle))
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      if (this.current) this.current.onStderr(chunk)
      else if (!this.started && this.bootStderr.length < 20_000) this.bootStderr += chunk
    })
    let exitedAt: number | undefined
    this.child.on('exit', () => (exitedAt = Date.now()))
    // 'close', not 'exit': the process is gone and its stdout and stderr are read to the end, the
    // failpoint's last line with them. After 'exit' the pipes may still hold it: waiting one
    // setImmediate for them lost it under load ("died by SIGKILL without a failpoint line").
    this.child.on('close', (code, signal) => {
      const at = exitedAt ?? Date.now()
      this.current?.finish({code, signal, at}, true)
      this.current = undefined
      onExit(this, {code, signal, at})
    })
  }

  assign(worker: WorkerProcess, assignment: Assignment): void {
    this.idle = false
    this.current = worker
    if (assignment.config.role === 'producer') this.producer = true
    this.child.stdin!.write(JSON.stringify(assignment) + '\n')
  }

  /** Asks the assignment to stop gracefully (what SIGTERM did to a one-shot worker). */
  stop(): void {
    this.child.stdin!.write('stop\n')
  }

  private onStdout(chunk: string, onIdle: (p: Pooled) => void): void {
    this.stdoutBuffer += chunk
    let nl: number
    while ((nl = this.stdoutBuffer.indexOf('\n')) >= 0) {
      const line = this.stdoutBuffer.slice(0, nl)
      this.stdoutBuffer = this.stdoutBuffer.slice(nl + 1)
      if (line !== 'idle') {
        this.current?.onLine(line)
        continue
      }
      // the assignment returned: a finish with exit code 0, as a one-shot worker's was
      const done = this.current
      this.current = undefined
      done?.finish({code: 0, signal: null, at: Date.now()}, false)
      this.idle = true
      this.started = true
      onIdle(this)
    }
  }
}

/**
 * Processes loading at once: the others wait their turn. Started all at once, the 12-14 of a
 * 4-lane call's first runs share the cores and each is ready only when nearly all are (12 at
 * once: the first ready after 7.6-10.4 s, at load 16; 3 at a time: after 1.8-2.2 s, the 5th
 * after 4.6-5.0 s, the last at 8.1-12.4 s): the first run (the longest) waited for every lane's.
 * One beyond the cores: a loading process also waits (files, its database connection).
 */
const LOADING_AT_ONCE = availableParallelism() + 1

/**
 * The worker processes of one runChaos call. Workers never outlive the harness: killed when it
 * exits (also on --timeout's process.exit) or is interrupted (kill()); a worker orphaned anyway
 * (harness SIGKILLed, or a library caller that handles no signal) notices and exits itself.
 */
export class WorkerPool {
  private readonly live = new Set<Pooled>()
  private readonly waiting: Waiter[] = []
  /** processes to start once fewer than LOADING_AT_ONCE load (true: for producers) */
  private readonly queued: boolean[] = []
  private closed = false
  private readonly killLive = () => this.live.forEach((p) => p.child.kill('SIGKILL'))

  /**
   * spares: idle (or starting) processes kept beyond those at work, so that a restart after a
   * kill and the next run's workers find one ready; preloadUrl: the database whose driver they load.
   */
  constructor(private readonly options: {spares?: number; preloadUrl?: string} = {}) {
    process.on('exit', this.killLive)
  }

  /**
   * Starts processes until `count` are idle or starting, `producers` of them with Kysely loaded
   * (a producer's restart after a kill then finds one ready rather than loading it on the run's clock).
   */
  warm(count: number, producers = 0): void {
    // the others first: a run asks for its consumer and relays before its producer, and
    // processes are ready in the order they start (LOADING_AT_ONCE)
    while (!this.closed && this.unassigned() - this.unassigned(true) < count - producers) this.start(false)
    while (!this.closed && this.unassigned(true) < producers) this.start(true)
    while (!this.closed && this.unassigned() < count) this.start(false)
  }

  /** An assignment for the next free process: returned at once, running as soon as one is idle. */
  spawn(name: string, config: WorkerConfig, armed?: Armed, recording = false): WorkerProcess {
    const worker = new WorkerProcess(name, config, armed, recording)
    const assignment: Assignment = {config, failpoints: armed ? `${armed.step}=kill@${armed.hit}` : undefined}
    this.take({
      producer: config.role === 'producer',
      use: (p) => {
        // stopped (the run ended) before a process was free: the process stays idle
        if (worker.exit) return this.onIdle(p)
        worker.bind(p)
        p.assign(worker, assignment)
      },
      // the process meant for it could not start: its death is this worker's
      fail: (p, exit) => {
        worker.onStderr(p.bootStderr)
        worker.finish(exit, true)
      },
    })
    this.warm(this.options.spares ?? 2, 1)
    return worker
  }

  /** SIGKILLs every live worker: on interruption, when a run's own stop cannot be awaited. */
  kill(): void {
    this.killLive()
  }

  /**
   * No more assignments: idle processes and those still loading are SIGKILLed (they hold nothing;
   * one loading could still be opening the database file the caller is about to delete), one still
   * stopping leaves when its stdin ends. Resolves once every process has gone; the exit guard goes then.
   */
  close(): Promise<void> {
    this.closed = true
    this.queued.length = 0
    const gone = [...this.live].map((p) => new Promise<void>((resolve) => (p.child.exitCode !== null || p.child.signalCode !== null ? resolve() : p.child.once('exit', () => resolve()))))
    for (const p of this.live) {
      if (p.current) p.child.stdin!.end()
      else p.child.kill('SIGKILL')
    }
    this.release()
    return Promise.all(gone).then(() => {})
  }

  /** processes free or starting, less the assignments waiting for one (producers: of those for producers) */
  private unassigned(producers = false): number {
    const free = [...this.live].filter((p) => !p.current && (!producers || p.producer)).length + this.queued.filter((q) => !producers || q).length
    return free - this.waiting.filter((w) => !producers || w.producer).length
  }

  private take(waiter: Waiter): void {
    const free = [...this.live].filter((p) => p.idle && !p.current)
    const idle = free.find((p) => p.producer === waiter.producer) ?? free[0]
    if (idle) {
      idle.idle = false
      return waiter.use(idle)
    }
    this.waiting.push(waiter)
    if (this.unassigned() < 0) this.start(waiter.producer)
  }

  private start(forProducers: boolean): void {
    this.queued.push(forProducers)
    this.launch()
  }

  /** Starts queued processes while fewer than LOADING_AT_ONCE are loading. */
  private launch(): void {
    let loading = [...this.live].filter((p) => !p.started).length
    while (!this.closed && this.queued.length > 0 && loading < LOADING_AT_ONCE) {
      loading++
      this.spawnProcess(this.queued.shift()!)
    }
  }

  private spawnProcess(forProducers: boolean): void {
    const p = new Pooled(
      this.options.preloadUrl,
      forProducers,
      (gone, exit) => {
        this.live.delete(gone)
        // one that could not start fails a waiting assignment rather than being started again and again
        if (!gone.started) this.waiting.shift()?.fail(gone, exit)
        // a death (a kill at a step) leaves the pool short: one more if someone waits
        else if (!this.closed && this.unassigned() < 0) this.start(this.waiting[0]?.producer ?? false)
        this.launch()
        this.release()
      },
      (idle) => this.onIdle(idle),
    )
    this.live.add(p)
  }

  private onIdle(p: Pooled): void {
    this.launch()
    if (this.closed) return void p.child.stdin!.end()
    const index = this.waiting.findIndex((w) => w.producer === p.producer)
    const next = this.waiting.splice(index < 0 ? 0 : index, 1)[0]
    if (!next) return void (p.idle = true)
    p.idle = false
    next.use(p)
  }

  private release(): void {
    if (this.closed && this.live.size === 0) process.off('exit', this.killLive)
  }
}

/** One assignment of a pooled worker process: what the harness sees of a worker. */
export class WorkerProcess {
  readonly exited: Promise<WorkerExit>
  /** last "op <n>" line: the business op in progress */
  lastOp?: number
  /** "op-error <n>" lines: ops that failed and were passed over */
  opErrors = 0
  done = false
  ready = false
  stderr = ''
  readonly spawnedAt = Date.now()
  /** the OS process running it, once one was free */
  pid?: number
  /** its "h {...}" lines (history.ts), kept only when the run records a history */
  readonly history: WorkerEntry[] = []
  exit?: WorkerExit
  private process?: Pooled
  private resolveExit!: (exit: WorkerExit) => void

  constructor(
    readonly name: string,
    readonly config: WorkerConfig,
    readonly armed?: Armed,
    private readonly recording = false,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve))
  }

  bind(p: Pooled): void {
    this.process = p
    this.pid = p.child.pid
  }

  onStderr(chunk: string): void {
    if (this.stderr.length < 20_000) this.stderr += chunk
  }

  onLine(line: string): void {
    const op = /^op (\d+)$/.exec(line)
    if (op) this.lastOp = Number(op[1])
    else if (/^op-error \d+$/.test(line)) this.opErrors++
    else if (line === 'done') this.done = true
    else if (line === 'ready') this.ready = true
    else if (this.recording && line.startsWith(HISTORY_PREFIX)) this.record(line)
  }

  /** The assignment ended: its process died (died = true) or it returned and the process is idle again. */
  finish(exit: Omit<WorkerExit, 'failpoint'>, died: boolean): void {
    if (this.exit) return
    const fired = died ? /outbox-failpoint (\S+)/.exec(this.stderr) : null
    this.exit = {...exit, failpoint: fired?.[1]}
    this.process = undefined
    this.resolveExit(this.exit)
  }

  private record(line: string): void {
    try {
      this.history.push(JSON.parse(line.slice(HISTORY_PREFIX.length)) as WorkerEntry)
    } catch {
      // a line cut short by a SIGKILL: the death itself is in the history
    }
  }

  get alive(): boolean {
    return this.exit === undefined
  }

  /** The last lines of stderr, for a report. */
  stderrTail(lines = 3): string {
    return this.stderr.trim().split('\n').slice(-lines).join(' | ')
  }

  /** Asks it to stop gracefully, then SIGKILLs its process if it has not stopped within graceMs. */
  async stop(graceMs = 3000): Promise<WorkerExit> {
    if (this.exit) return this.exit
    const p = this.process
    if (!p) {
      // no process was free yet: nothing ran
      this.finish({code: 0, signal: null, at: Date.now()}, false)
      return this.exit!
    }
    p.stop()
    const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs)
    const exit = await this.exited
    clearTimeout(timer)
    return exit
  }
}

/** What a death means for the harness. */
export function classifyExit(exit: WorkerExit, armed?: {step: Step}): 'killed-at-step' | 'killed-elsewhere' | 'finished' | 'crashed' {
  if (exit.signal === 'SIGKILL') return armed && exit.failpoint === armed.step ? 'killed-at-step' : 'killed-elsewhere'
  if (exit.code === 0) return 'finished'
  return 'crashed'
}
