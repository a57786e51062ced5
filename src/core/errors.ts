// Errors a user can act on: one line, the next step to take, and the exit code it maps to.

export const EXIT = {ok: 0, check: 1, usage: 2} as const

/** Work stopped by a signal before it was done: 128 + the signal's number. */
export const SIGNAL_EXIT = {SIGINT: 130, SIGTERM: 143} as const
export type StopSignal = keyof typeof SIGNAL_EXIT

export class OutboxError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode: number = EXIT.usage,
  ) {
    super(message)
    this.name = 'OutboxError'
  }

  /** "problem: next step" on one line */
  line(): string {
    return this.hint ? `${this.message}. ${this.hint}` : this.message
  }
}

/** Bad flag values, identifiers, durations: exit 2, nothing touched. */
export class UsageError extends OutboxError {}

/** The database cannot be reached, refused the login, or lacks the outbox tables: exit 2. */
export class ConnectionError extends OutboxError {}
