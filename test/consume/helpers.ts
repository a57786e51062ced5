// Shared by the consume tests: sample events as the relay claims them, what decode should
// give back for each, and a small JSON Schema check for the envelope schema's keywords.
import type {ClaimedEvent} from '../../src/schema/event-row.js'
import type {ConsumedEvent} from '../../src/consume/event.js'

/** Three shapes the contract must carry: full, no aggregate type/version/headers, non-ASCII text. */
export function samples(tag: string): ClaimedEvent[] {
  const at = new Date('2026-02-03T04:05:06.789Z')
  return [
    {
      id: `0190c3c2-0000-7000-8000-${tag}00000001`,
      eventType: 'order.created',
      aggregateType: 'order',
      aggregateId: 'order-1',
      aggregateVersion: 3,
      payload: '{"amount":42,"big":12345678901234567890,"lines":[{"sku":"a"}]}',
      headers: '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tenant":"acme"}',
      createdAt: at,
      attempts: 1,
    },
    {
      id: `0190c3c2-0000-7000-8000-${tag}00000002`,
      eventType: 'order.cancelled',
      aggregateType: null,
      aggregateId: 'order-2',
      aggregateVersion: null,
      payload: 'null',
      headers: null,
      createdAt: at,
      attempts: 2,
    },
    {
      id: `0190c3c2-0000-7000-8000-${tag}00000003`,
      eventType: 'order.shipped',
      aggregateType: 'order',
      aggregateId: '订单-Zürich',
      aggregateVersion: 0,
      payload: '{"city":"Zürich","note":"line\\nbreak \\"quoted\\""}',
      headers: '{"tenant":"ünï"}',
      createdAt: at,
      attempts: 1,
    },
  ]
}

/** What a consumer must read back from a sample. */
export function expected(event: ClaimedEvent): ConsumedEvent {
  return {
    id: event.id,
    eventType: event.eventType,
    aggregateType: event.aggregateType,
    aggregateId: event.aggregateId,
    aggregateVersion: event.aggregateVersion,
    payload: JSON.parse(event.payload),
    headers: event.headers ? JSON.parse(event.headers) : {},
    createdAt: event.createdAt,
  }
}

type Schema = Record<string, any>

/**
 * Errors of `value` against `schema`, for the keywords schemas/envelope.schema.json uses
 * (type, required, properties, additionalProperties, minLength, minimum, pattern, format
 * date-time, oneOf, $ref to #/$defs, propertyNames with not/pattern). Any other keyword is an error.
 */
export function schemaErrors(value: unknown, schema: Schema, root: Schema = schema, path = '$'): string[] {
  const known = new Set(['$schema', '$id', 'title', 'description', 'type', 'required', 'properties', 'additionalProperties', 'minLength', 'minimum', 'pattern', 'format', 'oneOf', '$ref', '$defs', 'propertyNames', 'not'])
  const unknown = Object.keys(schema).filter((k) => !known.has(k))
  if (unknown.length) return [`${path}: keyword(s) ${unknown.join(', ')} not checked by this test`]
  if (schema.$ref) return schemaErrors(value, root.$defs[schema.$ref.replace('#/$defs/', '')], root, path)
  if (schema.not) return schemaErrors(value, schema.not, root, path).length ? [] : [`${path}: matches a "not"`]
  const errors: string[] = []
  if (schema.oneOf) {
    const passing = (schema.oneOf as Schema[]).filter((s) => schemaErrors(value, s, root, path).length === 0).length
    if (passing !== 1) errors.push(`${path}: matches ${passing} of oneOf`)
  }
  if (schema.type) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type]
    const actual = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value
    const ok = types.some((t) => t === actual || (t === 'integer' && Number.isInteger(value)) || (t === 'number' && actual === 'number'))
    if (!ok) return [`${path}: ${actual} is not ${types.join('|')}`]
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${path}: shorter than ${schema.minLength}`)
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value)) errors.push(`${path}: does not match ${schema.pattern}`)
    if (schema.format === 'date-time' && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value)) errors.push(`${path}: not a date-time`)
  }
  if (typeof value === 'number' && schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: below ${schema.minimum}`)
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>
    for (const name of schema.required ?? []) if (!(name in o)) errors.push(`${path}: no ${name}`)
    for (const [name, v] of Object.entries(o)) {
      if (schema.propertyNames) errors.push(...schemaErrors(name, schema.propertyNames, root, `${path} name ${name}`))
      const sub = schema.properties?.[name] ?? schema.additionalProperties
      if (sub === false) errors.push(`${path}: ${name} is not allowed`)
      else if (sub && typeof sub === 'object') errors.push(...schemaErrors(v, sub, root, `${path}.${name}`))
    }
  }
  return errors
}

/** Polls get() until it returns a value (for waiting on real brokers, not for timing). */
export async function eventually<T>(get: () => Promise<T | false | null | undefined>, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await get()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
