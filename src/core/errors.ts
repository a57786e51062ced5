// Errors a user can act on: one line, the next step to take, and the exit code it maps to.

export const EXIT = {ok: 0, check: 1, usage: 2} as const

/** Work stopped by a signal before it was done: 128 + the signal's number. */
export const SIGNAL_EXIT = {SIGINT: 130, SIGTERM: 143} as const
export type StopSignal = keyof typeof SIGNAL_EXIT

/**
 * Spells an option inside an error text. The library spells it as its callers pass it
 * (`minPublishedAgeMs`); the CLI passes one that spells it as the flag (`--min-published-age`).
 */
export type OptionSpelling = (option: string) => string

/** An error text: fixed, or one that names options through the spelling it is given. */
export type ErrorText = string | ((option: OptionSpelling) => string)

const asPassed: OptionSpelling = (option) => option

function spell(text: ErrorText, option: OptionSpelling): string {
  return typeof text === 'function' ? text(option) : text
}

export class OutboxError extends Error {
  readonly hint?: string
  /** the options the texts name, in order of mention (the one at fault first) */
  readonly options: readonly string[]
  private readonly texts: {message: ErrorText; hint?: ErrorText}

  constructor(
    message: ErrorText,
    hint?: ErrorText,
    readonly exitCode: number = EXIT.usage,
  ) {
    const named: string[] = []
    const noting: OptionSpelling = (option) => {
      if (!named.includes(option)) named.push(option)
      return option
    }
    super(spell(message, noting))
    this.name = 'OutboxError'
    this.hint = hint === undefined ? undefined : spell(hint, noting)
    this.options = named
    this.texts = {message, hint}
  }

  /** the option at fault, as the library names it (undefined when the error names none) */
  get option(): string | undefined {
    return this.options[0]
  }

  /**
   * "problem. next step" on one line, options spelled by `option` (default: as passed). Built
   * from the texts given to the constructor, so a parser that decorates `message` (oclif
   * prefixes "Parsing --flag") does not change it.
   */
  line(option: OptionSpelling = asPassed): string {
    const message = spell(this.texts.message, option)
    const hint = this.texts.hint === undefined ? '' : spell(this.texts.hint, option)
    return hint ? `${message}. ${hint}` : message
  }
}

/** Bad flag values, identifiers, durations: exit 2, nothing touched. */
export class UsageError extends OutboxError {}

/** The database cannot be reached, refused the login, or lacks the outbox tables: exit 2. */
export class ConnectionError extends OutboxError {}

/** A consumer's broker could not be reached when its runtime opened it (a bad URL looks the same): exit 2. */
export class BrokerUnreachableError extends UsageError {}

/** A consumer runtime lost its broker connection mid-run: what a supervisor starts it again after. */
export class BrokerLostError extends ConnectionError {}
