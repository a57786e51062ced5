// The base every command extends: one-line errors with the right exit code, never a stack,
// and a global --timeout so no one-shot command can hang a CI job forever.
import {Command} from '@oclif/core'
import {redactSecrets} from '../core/redact.js'
import {EXIT, OutboxError} from '../core/errors.js'
import {formatAge, parseDuration} from '../core/time.js'
import {duration} from './flags.js'
import {asFlag} from './option-flags.js'

let timedOut = false

/** True once --timeout has fired (it then emits SIGTERM so commands stop the way they would on a signal). */
export function hasTimedOut(): boolean {
  return timedOut
}

interface OclifError {
  oclif?: {exit?: number}
  code?: string
  message?: string
}

export abstract class OutboxCommand extends Command {
  static override baseFlags = {
    timeout: duration({
      description: 'give up after this long with exit 2 (default 10m for one-shot commands; none for relay and chaos unless given)',
      helpGroup: 'GLOBAL',
      helpValue: 'DURATION',
    }),
  }

  /** one-shot commands get this; long-running ones (relay) set it to undefined */
  static defaultTimeoutMs: number | undefined = 10 * 60_000

  /** set by commands that connect, so driver errors can be scrubbed of the password */
  protected secretUrl?: string

  override async init(): Promise<void> {
    await super.init()
    const ms = this.timeoutMs()
    if (ms === undefined) return
    setTimeout(() => {
      timedOut = true
      process.stderr.write(`outbox: timed out after ${formatAge(ms / 1000)}. Raise --timeout or check what the command was waiting for (locks, an unreachable server)\n`)
      process.exitCode = EXIT.usage
      // Commands that clean up on SIGTERM (verify drops its scratch table) get to do so, briefly.
      if (process.listenerCount('SIGTERM') === 0) process.exit(EXIT.usage)
      setTimeout(() => process.exit(EXIT.usage), 5000).unref()
      process.emit('SIGTERM', 'SIGTERM') // as a real signal does: handlers are given its name
    }, ms).unref()
  }

  /** --timeout from argv (before parse, so it also bounds connecting), else the command's default. */
  private timeoutMs(): number | undefined {
    const i = this.argv.findIndex((a) => a === '--timeout' || a.startsWith('--timeout='))
    if (i === -1) return this.defaultTimeout()
    const value = this.argv[i].includes('=') ? this.argv[i].slice('--timeout='.length) : this.argv[i + 1]
    return parseDuration(value ?? '', 'timeout') // a bad value is a one-line usage error (exit 2)
  }

  /** the timeout when --timeout is not given; a command that runs until stopped in some modes (status --watch) overrides it */
  protected defaultTimeout(): number | undefined {
    return (this.constructor as typeof OutboxCommand).defaultTimeoutMs
  }

  protected override async catch(error: unknown): Promise<never> {
    const e = error as OclifError
    if (e?.code === 'EEXIT') throw error // this.exit(): already decided
    const {line, exitCode} = this.describe(error)
    const text = redactSecrets(line, this.secretUrl)
    if (this.jsonEnabled()) this.logJson({error: {message: text, exitCode}})
    process.stderr.write(`outbox: ${text}\n`)
    this.exit(exitCode)
    throw error
  }

  private describe(error: unknown): {line: string; exitCode: number} {
    // library errors name options (minPublishedAgeMs): here they are spelled as flags
    if (error instanceof OutboxError) return {line: error.line(asFlag), exitCode: error.exitCode}
    const e = error as OclifError
    const first = String(e?.message ?? error).split('\n')[0].replace(/^Error: /, '')
    // oclif's own parse errors (unknown flag, bad option) carry exit 2.
    if (e?.oclif?.exit === 2) return {line: `${parseErrorLine(e)}. See: outbox ${(this.id ?? '').replaceAll(':', ' ')} --help`, exitCode: EXIT.usage}
    return {line: `unexpected error: ${first}`, exitCode: e?.oclif?.exit ?? EXIT.usage}
  }
}

/**
 * One line from an oclif parse error, whose message spans lines: "The following error
 * occurred:" over the reasons, "Missing 1 required arg:" over a list of the arguments.
 */
export function parseErrorLine(e: OclifError & {args?: {name?: string}[]}): string {
  if (Array.isArray(e.args) && /^Missing \d+ required arg/.test(e.message ?? '')) {
    return `missing argument ${e.args.map((a) => String(a.name ?? '').toUpperCase()).join(', ')}`
  }
  const lines = String(e.message ?? '')
    .replace(/\u001b\[[0-9;]*m/g, '') // oclif dims the reasons
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^See more help with/.test(line))
  const reasons = /^The following errors? occurred:$/.test(lines[0] ?? '') ? lines.slice(1) : lines
  return reasons.join('; ').replace(/^Error: /, '')
}
