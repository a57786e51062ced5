// The five invariants of DESIGN.md, checked on the database itself after the drain:
// atomic, delivered, effect once, nothing stuck, order; plus the scenario's business check.
import {sql, type Dialect} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {intentKey, type Scenario, type ScenarioContext} from './business-scenario.js'
import {tableRef, type RunTables} from './tables.js'

export type InvariantName = 'atomic' | 'delivered' | 'effect-once' | 'nothing-stuck' | 'order' | 'business'

export const INVARIANTS: InvariantName[] = ['atomic', 'delivered', 'effect-once', 'nothing-stuck', 'order', 'business']

export interface Violation {
  invariant: InvariantName | 'harness'
  message: string
  count: number
  /** a few ids that show it */
  witnesses: string[]
}

export interface Observed {
  /** committed business intents (aggregate#version) */
  committed: number
  /** distinct aggregates among them ("orders committed") */
  aggregates: number
  /** outbox rows (dual-write: distinct events the broker accepted) */
  events: number
  /** messages the consumer received, redeliveries included */
  deliveries: number
  /** extra receipts of an event already received */
  duplicateDeliveries: number
  /** extra applications of an effect already applied (must be 0) */
  duplicateEffects: number
  /** committed intents that never reached the consumer */
  lost: number
  /** events (outbox, broker or applied) with no committed business row */
  phantom: number
  /** events left pending, leased or failed (beyond what the scenario expects) */
  stuck: number
  /** deliveries detected as stale versions and not applied */
  stale: number
  /** events in the failed state */
  failed: number
  /** highest attempts on any event */
  maxAttempts: number
}

export interface CheckInput {
  db: Db
  tables: RunTables
  scenario: Scenario
  ctx: ScenarioContext
  /** the loopback broker's accepted publishes by event id, and messages it still holds unacknowledged */
  broker?: {acceptedById: Map<string, number>; unacked: string[]}
  /** events that must end failed (the poison message); they are excluded from delivered/stuck */
  expectFailed?: Set<string>
  /** whether the outbox is in the path (false for the dual-write strategies) */
  outbox: boolean
}

const WITNESSES = 5

type R = Record<string, unknown>

function num(v: unknown): number | null {
  return v == null ? null : Number(v)
}

function countBy<T>(items: T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>()
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1)
  return m
}

export async function checkInvariants(input: CheckInput): Promise<{observed: Observed; violations: Violation[]}> {
  const {db, tables: t, scenario, ctx} = input
  const d: Dialect = db.dialect
  const expectFailed = input.expectFailed ?? new Set<string>()
  const intents = await scenario.intents(db, ctx)
  const intentKeys = new Set(intents.map((i) => intentKey(i.aggregateId, i.aggregateVersion)))
  const outbox = await db.query<R>(
    sql`SELECT id, aggregate_id, aggregate_version, published_at, failed_at, lease_until, attempts, last_error FROM ${tableRef(d, t.outbox.outbox)}`,
  )
  const deliveries = await db.query<R>(sql`SELECT event_id, aggregate_id, aggregate_version, outcome FROM ${tableRef(d, t.deliveries)}`)
  const effects = await db.query<R>(sql`SELECT event_id, aggregate_id, aggregate_version, seen_max FROM ${tableRef(d, t.effects)}`)

  // Every event id we saw anywhere, with the business key it is about.
  const keyOf = new Map<string, string>()
  for (const r of outbox) keyOf.set(String(r.id), intentKey(String(r.aggregate_id), num(r.aggregate_version)))
  for (const r of [...deliveries, ...effects]) {
    if (!keyOf.has(String(r.event_id))) keyOf.set(String(r.event_id), intentKey(String(r.aggregate_id), num(r.aggregate_version)))
  }
  const violations: Violation[] = []
  const add = (invariant: InvariantName, message: string, ids: string[]) => {
    if (ids.length) violations.push({invariant, message, count: ids.length, witnesses: ids.slice(0, WITNESSES)})
  }
  const expectedFailedKeys = new Set([...expectFailed].map((id) => keyOf.get(id)).filter((k): k is string => !!k))

  // 1. atomic
  const outboxKeys = new Set(outbox.map((r) => keyOf.get(String(r.id))!))
  if (input.outbox) add('atomic', 'committed business rows without their event', [...intentKeys].filter((k) => !outboxKeys.has(k)))
  const phantomIds = [...keyOf].filter(([, k]) => !intentKeys.has(k)).map(([id]) => id)
  add('atomic', 'events without their business row (phantom)', phantomIds)

  // 2. delivered
  const receivedKeys = new Set(deliveries.map((r) => keyOf.get(String(r.event_id))!))
  const lostKeys = [...intentKeys].filter((k) => !receivedKeys.has(k) && !expectedFailedKeys.has(k))
  add('delivered', 'committed events that never reached the consumer (lost)', lostKeys)
  if (input.outbox) {
    add(
      'delivered',
      'events never marked published',
      outbox.filter((r) => r.published_at == null && !expectFailed.has(String(r.id))).map((r) => String(r.id)),
    )
  }
  if (input.broker) {
    const notAtBroker = outbox.filter((r) => r.published_at != null && !input.broker!.acceptedById.has(String(r.id))).map((r) => String(r.id))
    add('delivered', 'marked published but never accepted by the broker', notAtBroker)
  }
  for (const id of expectFailed) {
    if (deliveries.some((r) => String(r.event_id) === id)) add('delivered', 'the poison message reached the consumer', [id])
  }

  // 3. effect once
  const effectCount = countBy(effects, (r) => String(r.event_id))
  const twice = [...effectCount].filter(([, n]) => n > 1)
  add('effect-once', 'side effects applied more than once', twice.map(([id, n]) => `${id} (x${n})`))
  const staleIds = new Set(deliveries.filter((r) => r.outcome === 'stale').map((r) => String(r.event_id)))
  const receivedIds = new Set(deliveries.map((r) => String(r.event_id)))
  const neverApplied = [...receivedIds].filter((id) => !effectCount.has(id) && !staleIds.has(id) && intentKeys.has(keyOf.get(id)!))
  add('effect-once', 'delivered but the side effect was never applied', neverApplied)

  // 4. nothing stuck
  const stuck = outbox.filter((r) => r.published_at == null && !expectFailed.has(String(r.id)))
  const describe = (r: R) =>
    `${r.id} (${r.failed_at != null ? 'failed' : r.lease_until != null ? 'leased/backoff' : 'pending'}, attempts ${r.attempts}${r.last_error ? `, last error: ${String(r.last_error).slice(0, 120)}` : ''})`
  add('nothing-stuck', 'events left unpublished', stuck.map(describe))
  for (const id of expectFailed) {
    const row = outbox.find((r) => String(r.id) === id)
    if (row && row.failed_at == null) add('nothing-stuck', 'the poison message did not end in the failed state', [describe(row)])
  }
  if (input.broker?.unacked.length) add('nothing-stuck', 'messages the broker still holds unacknowledged', input.broker.unacked)

  // 5. order
  const outOfOrder = effects.filter((r) => r.aggregate_version != null && r.seen_max != null && Number(r.aggregate_version) < Number(r.seen_max))
  add('order', 'effects applied over a newer version of the same aggregate', outOfOrder.map((r) => `${r.event_id} (v${r.aggregate_version} after v${r.seen_max})`))

  // business invariant
  if (scenario.check) add('business', `scenario ${scenario.name}: business invariant`, await scenario.check(db, ctx))

  const deliveryCount = countBy(deliveries, (r) => String(r.event_id))
  const brokerIds = input.broker ? [...input.broker.acceptedById.keys()] : []
  const observed: Observed = {
    committed: intentKeys.size,
    aggregates: new Set(intents.map((i) => i.aggregateId)).size,
    events: input.outbox ? outbox.length : new Set([...brokerIds, ...receivedIds]).size,
    deliveries: deliveries.length,
    duplicateDeliveries: [...deliveryCount.values()].reduce((s, n) => s + n - 1, 0),
    duplicateEffects: twice.reduce((s, [, n]) => s + n - 1, 0),
    lost: lostKeys.length,
    phantom: phantomIds.length,
    stuck: stuck.length,
    stale: staleIds.size,
    failed: outbox.filter((r) => r.failed_at != null).length,
    maxAttempts: Math.max(0, ...outbox.map((r) => Number(r.attempts))),
  }
  return {observed, violations}
}
