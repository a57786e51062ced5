// Harness side of the worker processes: spawn with or without an armed failpoint, follow
// their stdout protocol, and tell a real SIGKILL at the armed step from any other death.
import {spawn, type ChildProcess} from 'node:child_process'
import {existsSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import type {Step} from '../../core/failpoints.js'
import {HISTORY_PREFIX, type WorkerEntry} from '../history.js'
import type {WorkerConfig} from './worker.js'

export interface WorkerExit {
  code: number | null
  signal: NodeJS.Signals | null
  /** the step named by the "outbox-failpoint <step>" line, if the worker printed one */
  failpoint?: string
  /** Date.now() when the process was seen to exit */
  at: number
}

function workerScript(): {script: string; execArgv: string[]} {
  const js = fileURLToPath(new URL('./worker.js', import.meta.url))
  if (existsSync(js)) return {script: js, execArgv: []}
  // running from sources (bin/dev.js, vitest): the worker is TypeScript, run it through tsx
  return {script: fileURLToPath(new URL('./worker.ts', import.meta.url)), execArgv: ['--import', 'tsx']}
}

/**
 * The worker processes of one runChaos call. Workers never outlive the harness: killed when it
 * exits (also on --timeout's process.exit) or is interrupted (kill()); a worker orphaned anyway
 * (harness SIGKILLed, or a library caller that handles no signal) notices and exits itself.
 */
export class WorkerPool {
  private readonly live = new Set<ChildProcess>()
  private closed = false
  private readonly killLive = () => this.live.forEach((c) => c.kill('SIGKILL'))

  constructor() {
    process.on('exit', this.killLive)
  }

  spawn(name: string, config: WorkerConfig, armed?: {step: Step; hit: number}, recording = false): WorkerProcess {
    const worker = new WorkerProcess(name, config, armed, recording)
    this.live.add(worker.child)
    worker.child.on('exit', () => {
      this.live.delete(worker.child)
      this.release()
    })
    return worker
  }

  /** SIGKILLs every live worker: on interruption, when a run's own stop cannot be awaited. */
  kill(): void {
    this.killLive()
  }

  /** No more spawns: the exit guard goes once the last live worker has gone. */
  close(): void {
    this.closed = true
    this.release()
  }

  private release(): void {
    if (this.closed && this.live.size === 0) process.off('exit', this.killLive)
  }
}

export class WorkerProcess {
  readonly child: ChildProcess
  readonly exited: Promise<WorkerExit>
  /** last "op <n>" line: the business op in progress */
  lastOp?: number
  /** "op-error <n>" lines: ops that failed and were passed over */
  opErrors = 0
  done = false
  ready = false
  stderr = ''
  readonly spawnedAt = Date.now()
  /** its "h {...}" lines (history.ts), kept only when the run records a history */
  readonly history: WorkerEntry[] = []
  private stdoutBuffer = ''
  exit?: WorkerExit

  constructor(
    readonly name: string,
    readonly config: WorkerConfig,
    readonly armed?: {step: Step; hit: number},
    private readonly recording = false,
  ) {
    const {script, execArgv} = workerScript()
    const env: NodeJS.ProcessEnv = {...process.env, OUTBOX_CHAOS_WORKER: JSON.stringify(config)}
    if (armed) env.OUTBOX_FAILPOINTS = `${armed.step}=kill@${armed.hit}`
    else delete env.OUTBOX_FAILPOINTS
    this.child = spawn(process.execPath, [...execArgv, script], {env, stdio: ['ignore', 'pipe', 'pipe']})
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.onStdout(chunk))
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      if (this.stderr.length < 20_000) this.stderr += chunk
    })
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        const at = Date.now()
        // let the pipes flush the last lines before reading them
        setImmediate(() => {
          const fired = /outbox-failpoint (\S+)/.exec(this.stderr)
          this.exit = {code, signal, failpoint: fired?.[1], at}
          resolve(this.exit)
        })
      })
    })
  }

  private onStdout(chunk: string): void {
    this.stdoutBuffer += chunk
    let nl: number
    while ((nl = this.stdoutBuffer.indexOf('\n')) >= 0) {
      const line = this.stdoutBuffer.slice(0, nl)
      this.stdoutBuffer = this.stdoutBuffer.slice(nl + 1)
      const op = /^op (\d+)$/.exec(line)
      if (op) this.lastOp = Number(op[1])
      else if (/^op-error \d+$/.test(line)) this.opErrors++
      else if (line === 'done') this.done = true
      else if (line === 'ready') this.ready = true
      else if (this.recording && line.startsWith(HISTORY_PREFIX)) this.record(line)
    }
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

  /** SIGTERM, then SIGKILL if it has not gone within graceMs. */
  async stop(graceMs = 3000): Promise<WorkerExit> {
    if (this.exit) return this.exit
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs)
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
