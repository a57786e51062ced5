// Shared plumbing of the ops commands (status, failed, replay, archive): connect with the
// password scrubbed from errors, map query errors (missing table) to one line, and the
// rules destructive commands share: --dry-run, --yes, confirmation on a TTY.
import {Flags} from '@oclif/core'
import {createInterface} from 'node:readline/promises'
import {resolveConnection, type ConnectionSettings} from '../config.js'
import type {Db} from '../db/index.js'
import type {Progress} from '../ops/batches.js'
import {UsageError} from '../core/errors.js'
import {OutboxCommand} from './base.js'
import {connectionFlags, positiveInt, tableFlags, tableNamesFrom} from './flags.js'
import {SIGNAL_EXIT, stopOnSignal} from './signals.js'

export const opsFlags = {...connectionFlags, ...tableFlags}

export const destructiveFlags = {
  'dry-run': Flags.boolean({description: 'print the count and a sample of what would change, and change nothing'}),
  yes: Flags.boolean({char: 'y', description: 'do not ask for confirmation (required when stdin is not a terminal)'}),
  batch: positiveInt({description: 'rows per batch (1-10000); each batch is one short transaction', default: '1000', helpValue: 'N', max: 10_000}),
}

export abstract class OpsCommand extends OutboxCommand {
  static override enableJsonFlag = true

  protected async connection(flags: {url?: string; config?: string; table?: string; 'inbox-table'?: string; 'archive-table'?: string; schema?: string}): Promise<ConnectionSettings> {
    const settings = await resolveConnection({url: flags.url, config: flags.config, ...tableNamesFrom(flags)})
    this.secretUrl = settings.url
    return settings
  }

  /**
   * Opens, runs fn, closes; any driver error becomes one line naming the table. The database
   * must exist (a mistyped SQLite path leaves no new file); `readOnly` for commands that only
   * read (SQLite then opens the file read-only).
   */
  protected async withDb<T>(settings: ConnectionSettings, fn: (db: Db) => Promise<T>, {readOnly = false} = {}): Promise<T> {
    const {openDb, describeDbError} = await import('../db/index.js')
    const db = await openDb(settings.url, {mustExist: true, readOnly})
    try {
      return await fn(db)
    } catch (error) {
      throw describeDbError(error, settings.url, {table: settings.tables.outbox, archive: settings.tables.archive})
    } finally {
      await db.close().catch(() => {})
    }
  }

  /** Refuses before connecting: a destructive run without a terminal needs --yes. */
  protected requireYesWithoutTty(flags: {yes: boolean; 'dry-run': boolean}, what: string): void {
    if (flags.yes || flags['dry-run'] || process.stdin.isTTY) return
    throw new UsageError(`${what} changes the database and stdin is not a terminal`, 'Pass --yes to run it, or --dry-run to see what it would touch')
  }

  /** On a terminal, asks; with --yes (or nothing to do) goes ahead. */
  protected async confirm(flags: {yes: boolean}, question: string): Promise<boolean> {
    if (flags.yes || !process.stdin.isTTY) return true
    const rl = createInterface({input: process.stdin, output: process.stderr})
    try {
      const answer = await rl.question(`${question} [y/N] `)
      return /^y(es)?$/i.test(answer.trim())
    } finally {
      rl.close()
    }
  }

  /**
   * The destructive flow: plan (a dry run), print what will be touched, ask on a terminal,
   * then run with progress on stderr. A dry run returns the plan; nothing to do returns
   * `nothing(plan)`, a run that changed nothing.
   */
  protected async planConfirmRun<P, R extends {interrupted: boolean}>(
    flags: {yes: boolean; 'dry-run': boolean},
    steps: {
      plan: () => Promise<P>
      count: (plan: P) => number
      nothing: (plan: P) => R
      announce: (plan: P) => string
      question: (plan: P) => string
      progressVerb: string
      run: (plan: P, onProgress: (p: Progress) => void, signal: AbortSignal) => Promise<R>
    },
  ): Promise<P | R> {
    const plan = await steps.plan()
    const n = steps.count(plan)
    if (flags['dry-run']) return plan
    if (n === 0) return steps.nothing(plan)
    process.stderr.write(`${steps.announce(plan)}\n`)
    if (!(await this.confirm(flags, steps.question(plan)))) throw new UsageError('cancelled', 'Nothing changed')
    const {progressLine} = await import('../render/progress.js')
    const progress = progressLine(steps.progressVerb, n)
    const stop = stopOnSignal({
      first: (signal) => `${signal}: stopping after the batch in flight commits (send it again to abort that batch)`,
      second: (signal) => `${signal} again: exiting now; the batch in flight rolls back`,
    })
    try {
      const result = await steps.run(plan, progress.update, stop.signal)
      // Not done: a script must not read this as success (--timeout has already set 2). A signal
      // that came after the last batch stopped nothing: the result and the code both say done.
      if (result.interrupted && stop.received) process.exitCode ??= SIGNAL_EXIT[stop.received]
      return result
    } finally {
      stop.dispose()
      progress.done()
    }
  }
}
