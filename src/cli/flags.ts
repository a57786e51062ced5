// Flags shared by several commands, and the typed kinds every flag value goes through
// (durations, points in time, whole numbers in a range, backoffs, event ids, name lists).
// A kind checks its text while oclif parses the command line, so a command gets a value,
// and bad input is one usage line (exit 2) before anything is imported or connected.
import {Flags, type Interfaces} from '@oclif/core'
import {DIALECT_NAMES} from '../../dialects/names.js'
import {UsageError} from '../core/errors.js'
import {checkTimePoint, parseDuration} from '../core/time.js'
import {isUuid} from '../core/uuid.js'
import type {Backoff} from '../relay/backoff.js'

export const connectionFlags = {
  url: Flags.string({
    description: 'database URL (postgres://, mysql://, mariadb://, sqlite:PATH); else $OUTBOX_DATABASE_URL, the config file, $DATABASE_URL',
    helpValue: 'URL',
    env: 'OUTBOX_DATABASE_URL',
  }),
  config: Flags.string({description: 'JSON config file: any flag of any command (default $OUTBOX_CONFIG, else ./outbox.config.json; see outbox config)', helpValue: 'FILE'}),
}

export const tableFlags = {
  table: Flags.string({description: 'outbox table (default outbox_events)', helpValue: 'NAME'}),
  'inbox-table': Flags.string({description: 'inbox (processed events) table (default outbox_processed)', helpValue: 'NAME'}),
  'archive-table': Flags.string({description: 'archive table (default outbox_events_archive)', helpValue: 'NAME'}),
  schema: Flags.string({description: 'PostgreSQL schema for the tables (default: the search_path)', helpValue: 'NAME'}),
}

export const dialectFlag = Flags.string({
  description: `SQL dialect (${DIALECT_NAMES.join(', ')}; mariadb is mysql)`,
  helpValue: 'DIALECT',
})

/** Table flags in the shape src/schema/tables.ts takes. */
export function tableNamesFrom(flags: {table?: string; 'inbox-table'?: string; 'archive-table'?: string; schema?: string}) {
  return {table: flags.table, inboxTable: flags['inbox-table'], archiveTable: flags['archive-table'], schema: flags.schema}
}

// ---- typed kinds ------------------------------------------------------------------------

/** What every flag of a kind may say about itself in help. */
interface Described {
  description: string
  helpValue?: string
  helpGroup?: string
  /** written as on the command line: parsed like a typed value, and shown as is by --help */
  default?: string
  required?: boolean
  /** an empty value counts as not given (the relay's publisher flags have always read it so) */
  emptyIsUnset?: boolean
}

/** Makes flags of one kind: one given a default or required always has a value, any other may be undefined. */
export interface Kind<T, S extends object> {
  (props: Described & S & ({default: string} | {required: true})): Interfaces.OptionFlag<T>
  (props: Described & S): Interfaces.OptionFlag<T | undefined>
}

/**
 * A flag kind: `parse(text, flag, settings)` checks the text and returns the value, or throws a
 * UsageError (its option is the flag's name). Settings (bounds, allowZero) come with each flag.
 */
function kind<T, S extends object = object>(parse: (text: string, flag: string, settings: S) => T | undefined): Kind<T, S> {
  return (props: Described & S) => {
    const {default: text, ...rest} = props
    const read = (input: string, flag: {name: string}) => (props.emptyIsUnset && input === '' ? undefined : parse(input, flag.name, props))
    // typed by Kind above: oclif's own overloads cannot follow a generic T
    const definition = Flags.custom<unknown>({parse: async (input, _context, flag) => read(input, flag)})
    if (text === undefined) return definition(rest) as never
    // oclif hands a default over unparsed: it is read here, and help shows it as written
    return definition({...rest, default: async ({options}: {options: {name: string}}) => read(text, options), defaultHelp: async () => text}) as never
  }
}

/** Milliseconds ("500ms", "30s", "1h30m"; at most 3650d); zero only with allowZero. */
export const duration = kind<number, {allowZero?: boolean}>((text, flag, {allowZero}) => parseDuration(text, flag, {allowZero}))

/**
 * A point in time: a Date for ISO-8601 or a bare date, or the text itself for a duration
 * meaning ago ("2h"), checked here and read later against the database clock.
 */
export const timePoint = kind<Date | string>((text, flag) => checkTimePoint(text, flag))

/** A whole number from 1 to max. */
export const positiveInt = kind<number, {max: number}>((text, flag, {max}) => parsePositiveInt(text, flag, max))

/** A whole number from 0 to max. */
export const nonNegativeInt = kind<number, {max: number}>((text, flag, {max}) => parseNonNegativeInt(text, flag, max))

/** "1s..10m": exponential backoff from base to cap. */
export const backoff = kind<Backoff>((text) => parseBackoff(text))

/** An event id: a UUID, lowercased. */
export const eventId = kind<string>((text, flag) => checkEventId(text, flag))

/** Comma-separated event ids, each a UUID (kept as given); an empty value counts as not given. */
export const eventIds = kind<readonly string[]>((text, flag) => {
  if (!text) return undefined
  const ids = commaList(text, flag)
  for (const id of ids) checkEventId(id, flag)
  return ids
})

/** Comma-separated ids, not empty; what each must be is checked where they are used. */
export const idList = kind<readonly string[]>((text, flag) => commaList(text, flag))

/** Comma-separated names, each one of `allowed`; "none" means the empty list when `none` is set. */
export const names = <N extends string>(allowed: readonly N[], {none = false} = {}) =>
  kind<readonly N[]>((text, flag) => (none && text === 'none' ? [] : namesFrom(text, allowed, flag)))

function parsePositiveInt(text: string, flag: string, max = 1_000_000): number {
  if (!/^\d+$/.test(text.trim())) throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a positive whole number`, `Use e.g. --${flag} 100`)
  const n = Number(text)
  if (n < 1 || n > max) throw new UsageError(`--${flag} must be between 1 and ${max}`, `Use e.g. --${flag} ${Math.min(100, max)}`)
  return n
}

function parseNonNegativeInt(text: string, flag: string, max = 1_000_000): number {
  if (!/^\d+$/.test(text.trim())) throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a whole number`, `Use e.g. --${flag} 10`)
  const n = Number(text)
  if (n > max) throw new UsageError(`--${flag} must be at most ${max}`, `Use a whole number from 0 to ${max}`)
  return n
}

export function parseBackoff(text: string): Backoff {
  const m = /^\s*([^.\s]+)\s*\.\.\s*([^.\s]+)\s*$/.exec(text)
  if (!m) throw new UsageError(`--backoff ${JSON.stringify(text)} is not BASE..CAP`, 'Use e.g. --backoff 1s..10m')
  const baseMs = parseDuration(m[1], 'backoff')
  const capMs = parseDuration(m[2], 'backoff')
  if (capMs < baseMs) throw new UsageError(`--backoff cap ${m[2]} is shorter than its base ${m[1]}`, 'Use e.g. --backoff 1s..10m')
  return {baseMs, capMs}
}

/** An event id is a UUID (PostgreSQL would refuse anything else only when printed SQL runs). */
function checkEventId(id: string, flag: string): string {
  if (!isUuid(id)) throw new UsageError(`--${flag}: ${JSON.stringify(id)} is not an event id`, 'Give the UUID of an event')
  return id.toLowerCase()
}

function commaList(text: string, flag: string): string[] {
  const items = text.split(',').map((s) => s.trim()).filter(Boolean)
  if (items.length === 0) throw new UsageError(`--${flag} is empty`, 'Give comma-separated event ids')
  return items
}

function namesFrom<N extends string>(text: string, allowed: readonly N[], flag: string): N[] {
  const items = text.split(',').map((s) => s.trim()).filter(Boolean)
  const bad = items.filter((i) => !allowed.includes(i as N))
  if (bad.length || items.length === 0) throw new UsageError(`--${flag}: unknown ${bad.length ? bad.join(', ') : '(empty list)'}`, `Use a comma-separated list of: ${allowed.join(', ')}`)
  return items as N[]
}
