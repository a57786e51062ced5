// Every publisher checks its options when it is created, the same way, for callers in plain
// JavaScript too: an unknown key (a typo such as `exchnage`), a missing `target` or a value of
// the wrong kind is one UsageError naming the option, before anything connects. Before, a
// `target` given to amqp/nats/redis (which read `url`) was ignored and they went to localhost.
import {UsageError} from '../core/errors.js'
import {nearest} from '../core/nearest.js'
import {clip, printable} from '../core/text.js'

/**
 * Where a broker publisher sends: `target`, as `outbox relay --target`. `url` is its deprecated
 * alias (what amqp, nats and redis took before 0.2), accepted so existing callers keep working;
 * both at once is an error.
 */
export type Target = {target: string; url?: undefined} | {/** @deprecated use `target` (the same value) */ url: string; target?: undefined}

/** What one option must be: `check` says how a value falls short, or nothing when it is fine. */
export interface OptionRule {
  required?: boolean
  /** the value may hold a password or a token: an error never shows it */
  secret?: boolean
  /** the deprecated name of this option */
  aliasOf?: string
  /** a value to show when the option is missing */
  example?: string
  check(value: unknown): string | undefined
}

/** A rule for every key the options type can hold (both sides of a union): none forgotten. */
export type OptionRules<T> = Record<T extends unknown ? keyof T : never, OptionRule>

/** The options as the publisher reads them: aliases resolved, `target` present. */
export type Checked<T> = Omit<T, 'url'> & {target: string}

const TIMER_MAX_MS = 2_147_483_647 // setTimeout fires at once for anything longer

export const text = (): OptionRule => ({check: (v) => (typeof v === 'string' && v !== '' ? undefined : 'must be a non-empty string')})

export const yesNo = (): OptionRule => ({check: (v) => (typeof v === 'boolean' ? undefined : 'must be true or false')})

export const callback = (): OptionRule => ({check: (v) => (typeof v === 'function' ? undefined : 'must be a function')})

export const oneOf = (...values: string[]): OptionRule => ({
  check: (v) => (typeof v === 'string' && values.includes(v) ? undefined : `must be ${values.map((x) => JSON.stringify(x)).join(' or ')}`),
})

export const integer = (min: number, max = Number.MAX_SAFE_INTEGER): OptionRule => ({
  check: (v) => (Number.isInteger(v) && (v as number) >= min && (v as number) <= max ? undefined : `must be a whole number from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}`),
})

/** A timeout in milliseconds, within what a Node timer can wait. */
export const milliseconds = (): OptionRule => ({
  check: (v) => (typeof v === 'number' && v >= 1 && v <= TIMER_MAX_MS ? undefined : `must be from 1 to ${TIMER_MAX_MS} milliseconds (about 24.8 days, the longest a Node timer waits)`),
})

/** A string that also passes `more` (a check of its own, e.g. the NATS stream name's charset). */
export const textWhere = (more: (v: string) => string | undefined, {empty = false} = {}): OptionRule => ({
  check: (v) => (typeof v === 'string' && v === '' && empty ? undefined : (text().check(v) ?? more(v as string))),
})

/**
 * The destination: URLs of the given schemes (a NATS cluster: several, comma-separated, where
 * the client also takes a bare host:port). Never echoed: it may carry a password.
 */
export function target(schemes: string[], example: string, {list = false, bareHost = false} = {}): OptionRule {
  const wanted = `${list ? 'URLs' : 'a URL'}: ${schemes.map((s) => `${s}://`).join(' or ')}${list ? ' (comma-separated for a cluster)' : ''}`
  return {
    required: true,
    secret: true,
    example,
    check(v) {
      if (typeof v !== 'string' || v.trim() === '') return `must be ${wanted}`
      for (const url of list ? v.split(',').map((s) => s.trim()) : [v]) {
        const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase()
        if (scheme === undefined && bareHost && /^[^\s/:]+(:\d+)?$/.test(url)) continue
        if (scheme === undefined || !schemes.includes(scheme)) return `must be ${wanted}`
        if (!URL.canParse(url)) return `is not a valid URL`
      }
      return undefined
    },
  }
}

/** The deprecated name of another option: same value, never both. */
export const aliasOf = (option: string): OptionRule => ({aliasOf: option, secret: true, check: () => undefined})

/** Header names as HTTP allows them (RFC 9110 tokens). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

export const headerMap = (): OptionRule => ({
  secret: true, // values such as Authorization
  check(v) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'must be an object of header names to values'
    for (const [name, value] of Object.entries(v)) {
      if (!HEADER_NAME.test(name)) return `has ${JSON.stringify(name)}, which is no header name`
      if (typeof value !== 'string' || /[\r\n\0]/.test(value)) return `has a value for ${JSON.stringify(name)} that is not a one-line string`
    }
    return undefined
  },
})

export const writable = (): OptionRule => ({
  check: (v) => (typeof (v as {write?: unknown})?.write === 'function' ? undefined : 'must be a writable stream (process.stdout, a file stream, ...)'),
})

/**
 * The options checked against the publisher's rules: one UsageError naming the option at fault
 * (unknown key, missing, wrong kind, deprecated alias next to its option), else the options
 * with the alias resolved.
 */
export function checkOptions<T>(publisher: string, options: unknown, rules: OptionRules<T>): Checked<T> {
  const all = rules as Record<string, OptionRule>
  const given = options ?? {}
  const example = all.target?.example
  if (typeof given !== 'object' || Array.isArray(given)) throw new UsageError(`${publisher} publisher options must be an object, got ${what(given, true)}`, example && `e.g. {target: ${JSON.stringify(example)}}`)
  const out: Record<string, unknown> = {}
  const passedAs: Record<string, string> = {} // errors name the key the caller used
  for (const [key, value] of Object.entries(given)) {
    const rule = all[key]
    if (!rule) {
      const known = Object.keys(all).filter((k) => !all[k].aliasOf)
      const near = nearest(key, known)
      throw new UsageError((o) => `${publisher} publisher: unknown option ${o(key)}`, (o) => `${near ? `Did you mean ${o(near)}? ` : ''}Known: ${known.join(', ')}`)
    }
    if (value === undefined) continue
    if (rule.aliasOf) {
      const option = rule.aliasOf
      if ((given as Record<string, unknown>)[option] !== undefined) throw new UsageError((o) => `${publisher} publisher: ${o(key)} and ${o(option)} both given`, (o) => `Give ${o(option)} only: ${o(key)} is its deprecated name`)
      out[option] = value
      passedAs[option] = key
    } else out[key] = value
  }
  for (const [key, rule] of Object.entries(all)) {
    const value = out[key]
    if (value === undefined) {
      if (rule.required) throw new UsageError((o) => `${publisher} publisher needs ${o(key)}`, rule.example && `e.g. ${rule.example}`)
      continue
    }
    const wrong = rule.check(value)
    if (wrong) throw new UsageError((o) => `${publisher} publisher: ${o(passedAs[key] ?? key)} ${wrong}${rule.secret ? '' : `, got ${what(value)}`}`)
  }
  return out as Checked<T>
}

/** A value in an error line: strings quoted and cut short (unless secret), the kind of anything else. */
function what(value: unknown, secret = false): string {
  if (typeof value === 'string') return secret ? 'a string' : JSON.stringify(clip(printable(value), 60))
  if (value === null || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}
