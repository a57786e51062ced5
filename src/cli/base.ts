// The base every command extends: one-line errors with the right exit code, never a stack,
// and a global --timeout so no one-shot command can hang a CI job forever.
import {Command, type Interfaces} from '@oclif/core'
import {configFilePath, loadConfigFile} from '../config.js'
import {redactSecrets} from '../core/redact.js'
import {EXIT, OutboxError} from '../core/errors.js'
import {formatAge, parseDuration} from '../core/time.js'
import {duration} from './flags.js'
import {nearest} from '../core/nearest.js'
import {asFlag} from './option-flags.js'
import {fileValuesFor, parseFileValue, type FileValue, type FlagLike} from './settings/file-values.js'
import {NOT_IN_FILE, type Setting} from './settings/keys.js'

let timedOut = false

/** True once --timeout has fired (it then emits SIGTERM so commands stop the way they would on a signal). */
export function hasTimedOut(): boolean {
  return timedOut
}

/** --config's value in argv, read before parse because the file feeds parse. */
function givenConfig(argv: readonly string[]): string | undefined {
  const i = argv.findIndex((a) => a === '--config' || a.startsWith('--config='))
  if (i === -1 || argv.slice(0, i).includes('--')) return undefined
  return argv[i].includes('=') ? argv[i].slice('--config='.length) : argv[i + 1]
}

/** What every command prints with --json when it fails (schemas/output/error.schema.json). */
export interface ErrorOutput {
  error: {message: string; exitCode: number}
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

  /** false for a command that must not take the file's top-level url (chaos reads only its own) */
  static sharedUrl = true

  /** set by commands that connect, so driver errors can be scrubbed of the password */
  protected secretUrl?: string

  /** each flag's value and where it came from, after parse (what `outbox config` prints) */
  protected settings: Setting[] = []
  private showingSettings = false

  /**
   * oclif's parse, then the config file for what the command line left unset: a flag, then its
   * OUTBOX_* variable (oclif reads those), then the file, then the default. A required flag the
   * file gives is not required on the command line.
   */
  protected override async parse<F extends {[flag: string]: any}, B extends {[flag: string]: any}, A extends {[arg: string]: any}>(
    options?: Interfaces.Input<F, B, A>,
    argv = this.argv,
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    const input = options ?? (this.ctor as unknown as Interfaces.Input<F, B, A>)
    const defs = {...input.baseFlags, ...input.flags} as Record<string, FlagLike & {required?: boolean; env?: string; defaultHelp?: unknown}>
    const path = configFilePath(givenConfig(argv), process.env)
    const file = path ? loadConfigFile(path) : {}
    const fromFile = path ? fileValuesFor(this.id ?? '', file, path, this.config.commands.filter((c) => c.pluginName === this.config.name), {sharedUrl: (this.ctor as typeof OutboxCommand).sharedUrl}) : new Map<string, FileValue>()
    const optional = (name: string) => this.showingSettings || fromFile.has(name)
    const relaxed = Object.fromEntries(Object.entries(input.flags ?? {}).map(([name, def]) => [name, optional(name) ? {...def, required: false} : def]))
    // named one by one: a command class's inherited statics (baseFlags, strict) do not spread
    const {baseFlags, enableJsonFlag, strict, context} = input
    const args = this.showingSettings ? Object.fromEntries(Object.entries(input.args ?? {}).map(([name, arg]) => [name, {...arg, required: false}])) : input.args
    const output = await super.parse({baseFlags, enableJsonFlag, args: args as typeof input.args, strict, context, '--': input['--'], flags: relaxed as typeof input.flags}, argv)
    // every value the file gives this command is checked, even one a flag overrides this time
    const parsedFile = new Map<string, unknown>()
    for (const [name, value] of fromFile) if (defs[name]) parsedFile.set(name, await parseFileValue(name, defs[name], value, path!))
    const typed = new Map<string, string>()
    for (const token of output.raw) if (token.type === 'flag') typed.set(token.flag, token.input)
    const flags = output.flags as Record<string, unknown>
    this.settings = []
    for (const [name, def] of Object.entries(defs)) {
      if (NOT_IN_FILE.has(name)) continue
      const env = def.env && process.env[def.env] ? def.env : undefined
      const given = fromFile.get(name)
      if (typed.has(name)) this.settings.push({flag: name, value: flags[name], text: def.type === 'boolean' ? String(flags[name]) : typed.get(name), source: 'flag'})
      else if (env) this.settings.push({flag: name, value: flags[name], text: process.env[env], source: 'env', from: env})
      else if (given) {
        flags[name] = parsedFile.get(name)
        this.settings.push({flag: name, value: flags[name], text: typeof given.value === 'string' ? given.value : JSON.stringify(given.value), source: 'file', from: `${given.key} in ${path}`})
      } else {
        // a default as --help writes it ("30s", not 30000): asked only by `outbox config`, not on every run
        const shown = this.showingSettings && typeof def.defaultHelp === 'function' ? await def.defaultHelp({options: def, flags}) : flags[name]
        this.settings.push({flag: name, value: flags[name], text: shown === undefined ? undefined : String(shown), source: flags[name] === undefined ? 'unset' : 'default'})
      }
    }
    return output
  }

  /** The settings this command would run with (argv as given), without running it: `outbox config`. */
  async resolveSettings(): Promise<Setting[]> {
    this.showingSettings = true // a required flag or argument left out is shown as unset, not refused
    await this.parse()
    return this.settings
  }

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

  /** For `--bach`: "Did you mean --batch?" (oclif's own error for an unknown flag names it only). */
  private suggestFlag(e: OclifError & {flags?: unknown}): string | undefined {
    if (!Array.isArray(e.flags) || e.flags.length !== 1) return undefined
    const typed = String(e.flags[0]).replace(/^--?/, '').split('=')[0]
    const {flags = {}, baseFlags = {}} = this.ctor as {flags?: object; baseFlags?: object}
    const meant = nearest(typed, Object.keys({...baseFlags, ...flags}))
    return meant ? `Did you mean --${meant}?` : undefined
  }

  private describe(error: unknown): {line: string; exitCode: number} {
    // library errors name options (minPublishedAgeMs): here they are spelled as flags
    if (error instanceof OutboxError) return {line: error.line(asFlag), exitCode: error.exitCode}
    const e = error as OclifError
    const first = String(e?.message ?? error).split('\n')[0].replace(/^Error: /, '')
    // oclif's own parse errors (unknown flag, bad option) carry exit 2.
    if (e?.oclif?.exit === 2) return {line: `${parseErrorLine(e)}. ${this.suggestFlag(e) ?? `See: outbox ${(this.id ?? '').replaceAll(':', ' ')} --help`}`, exitCode: EXIT.usage}
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
