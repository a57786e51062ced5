// Payload and header validation before anything reaches the database.
import {DIALECT_NAMES, DIALECTS, type DialectName} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'

/** What each database can store in the payload column at most (bytes of JSON text): Dialect.events.maxPayloadBytes. */
export const DIALECT_PAYLOAD_LIMIT = Object.fromEntries(DIALECT_NAMES.map((name) => [name, DIALECTS[name].events.maxPayloadBytes])) as Record<DialectName, number>

/** Our default: events are notifications, not blobs. Raise with maxPayloadBytes. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024

export class PayloadError extends UsageError {}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

function check(value: unknown, path: string, seen: Set<object>): void {
  switch (typeof value) {
    case 'string':
      if (value.includes('\u0000')) throw new PayloadError(`payload ${path} contains a NUL character`, 'PostgreSQL JSON cannot store \\u0000; remove or encode it')
      if (LONE_SURROGATE.test(value)) throw new PayloadError(`payload ${path} is not valid UTF-16 (lone surrogate)`, 'Fix the string before writing the event')
      return
    case 'number':
      if (!Number.isFinite(value)) throw new PayloadError(`payload ${path} is ${value}`, 'JSON has no NaN or Infinity; use null or a string')
      return
    case 'boolean':
      return
    case 'object': {
      if (value === null) return
      if (seen.has(value)) throw new PayloadError(`payload ${path} is circular`, 'Pass a plain JSON-serialisable value')
      seen.add(value)
      if (Array.isArray(value)) value.forEach((v, i) => check(v, `${path}[${i}]`, seen))
      else if (value instanceof Date) {
        /* serialised as an ISO string */
      } else for (const [k, v] of Object.entries(value)) if (v !== undefined) check(v, `${path}.${k}`, seen)
      seen.delete(value)
      return
    }
    default:
      throw new PayloadError(`payload ${path} is a ${typeof value}`, 'Pass a plain JSON-serialisable value (objects, arrays, strings, finite numbers, booleans, null)')
  }
}

/** JSON text of a payload, or a PayloadError naming what is wrong. */
export function serialisePayload(payload: unknown, dialect: DialectName, maxBytes = DEFAULT_MAX_PAYLOAD_BYTES): string {
  if (payload === undefined) throw new PayloadError('payload is undefined', 'Pass a JSON value, e.g. {} or null')
  check(payload, '$', new Set())
  const text = JSON.stringify(payload)
  const limit = Math.min(maxBytes, DIALECT_PAYLOAD_LIMIT[dialect])
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes > limit) {
    throw new PayloadError(
      `payload is ${bytes} bytes; the limit is ${limit} bytes on ${dialect}`,
      limit < DIALECT_PAYLOAD_LIMIT[dialect] ? 'Store large data elsewhere and send a reference, or raise maxPayloadBytes' : 'Store large data elsewhere and send a reference',
    )
  }
  return text
}

export function serialiseHeaders(headers: Record<string, string> | null | undefined): string | null {
  if (headers == null) return null
  if (typeof headers !== 'object' || Array.isArray(headers)) throw new PayloadError('headers must be an object of strings', 'e.g. {traceparent: "00-..."}')
  for (const [k, v] of Object.entries(headers)) {
    if (typeof v !== 'string') throw new PayloadError(`header ${k} is a ${typeof v}`, 'Header values must be strings')
    check(v, `headers.${k}`, new Set())
  }
  return JSON.stringify(headers)
}
