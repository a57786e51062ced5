// The base every command extends: one-line errors with the right exit code, never a stack.
import {Command} from '@oclif/core'
import {redactSecrets} from '../config.js'
import {EXIT, OutboxError} from '../errors.js'

interface OclifError {
  oclif?: {exit?: number}
  code?: string
  message?: string
}

export abstract class OutboxCommand extends Command {
  /** set by commands that connect, so driver errors can be scrubbed of the password */
  protected secretUrl?: string

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
    if (error instanceof OutboxError) return {line: error.line(), exitCode: error.exitCode}
    const e = error as OclifError
    const first = String(e?.message ?? error).split('\n')[0].replace(/^Error: /, '')
    // oclif's own parse errors (unknown flag, bad option) carry exit 2.
    if (e?.oclif?.exit === 2) return {line: `${first}. See: outbox ${(this.id ?? '').replaceAll(':', ' ')} --help`, exitCode: EXIT.usage}
    return {line: `unexpected error: ${first}`, exitCode: e?.oclif?.exit ?? EXIT.usage}
  }
}
