// A business scenario (`--scenario`): the business write, the consumer's effect and the
// business invariant. The faults a run stages (`--scenarios`) are in scenarios/.
// Built in: the article's example (orders + order.created / order.paid, a projection consumer).
// `outbox chaos --scenario ./my-scenario.js` loads a module of the same shape.
import {existsSync} from 'node:fs'
import {resolve} from 'node:path'
import {pathToFileURL} from 'node:url'
import type {Dialect} from '../../dialects/index.js'
import {raw, sql} from '../../dialects/index.js'
import type {Queryable} from '../db/index.js'
import {UsageError} from '../core/errors.js'
import type {NewEvent} from '../producer.js'
import type {ConsumedEvent} from '../consume/event.js'

export interface ScenarioContext {
  dialect: Dialect
  sql: typeof sql
  raw: typeof raw
  /** quoted name of this run's scratch table: ctx.table('orders') -> "chaos_1a2b3c_orders" */
  table(name: string): ReturnType<typeof raw>
  /** business operations per run (the producer runs op 0 .. ops-1) */
  ops: number
}

/** An event as the consumer receives it from the broker: what the consumer runtime decodes. */
export type DeliveredEvent = ConsumedEvent

/** What committed business data says must have been emitted, keyed by aggregate and version. */
export interface Intent {
  aggregateId: string
  aggregateVersion: number | null
}

export interface Scenario {
  name: string
  description?: string
  /** scratch tables the scenario uses (names given to ctx.table), dropped after each run */
  tables: string[]
  /** operations per run, given the --orders size */
  ops(size: number): number
  /** create the scratch tables (portable SQL, or branch on ctx.dialect.name) */
  setup(db: Queryable, ctx: ScenarioContext): Promise<void>
  /** the business write for op n, inside the producer's transaction; returns the events it implies */
  write(tx: Queryable, op: number, ctx: ScenarioContext): Promise<NewEvent[]>
  /** the consumer's side effect, inside the consumer's transaction */
  effect(tx: Queryable, event: DeliveredEvent, ctx: ScenarioContext): Promise<void>
  /** after the drain: every event the committed business rows imply */
  intents(db: Queryable, ctx: ScenarioContext): Promise<Intent[]>
  /** after the drain: the business invariant, as violations naming ids (empty when it holds) */
  check?(db: Queryable, ctx: ScenarioContext): Promise<string[]>
}

type Row = Record<string, unknown>

/** The article's example: orders written with their event; an inventory-side projection consumes them. */
export const ordersScenario: Scenario = {
  name: 'orders',
  description: 'orders + order.created / order.paid, an order projection on the consumer side',
  tables: ['orders', 'order_view'],
  ops: (size) => size * 2,
  async setup(db, {table}) {
    await db.execute(sql`CREATE TABLE IF NOT EXISTS ${table('orders')} (
  id VARCHAR(64) NOT NULL PRIMARY KEY, customer_id VARCHAR(64) NOT NULL, status VARCHAR(32) NOT NULL,
  qty INTEGER NOT NULL, version INTEGER NOT NULL)`)
    await db.execute(sql`CREATE TABLE IF NOT EXISTS ${table('order_view')} (
  order_id VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(32) NOT NULL, qty INTEGER NOT NULL, version INTEGER NOT NULL)`)
  },
  async write(tx, op, {table, ops}) {
    const orders = ops / 2
    if (op < orders) {
      const id = `order-${op + 1}`
      const qty = (op % 3) + 1
      await tx.execute(sql`INSERT INTO ${table('orders')} (id, customer_id, status, qty, version) VALUES (${id}, ${`customer-${(op % 4) + 1}`}, 'created', ${qty}, 1)`)
      return [{eventType: 'order.created', aggregateType: 'order', aggregateId: id, aggregateVersion: 1, payload: {orderId: id, status: 'created', qty}}]
    }
    const id = `order-${op - orders + 1}`
    const changed = await tx.execute(sql`UPDATE ${table('orders')} SET status = 'paid', version = 2 WHERE id = ${id} AND version = 1`)
    if (changed === 0) return [] // its order.created was never committed (the producer died there)
    const [row] = await tx.query<Row>(sql`SELECT qty FROM ${table('orders')} WHERE id = ${id}`)
    return [{eventType: 'order.paid', aggregateType: 'order', aggregateId: id, aggregateVersion: 2, payload: {orderId: id, status: 'paid', qty: Number(row.qty)}}]
  },
  async effect(tx, event, {table}) {
    const p = event.payload as {orderId: string; status: string; qty: number}
    const updated = await tx.execute(
      sql`UPDATE ${table('order_view')} SET status = ${p.status}, qty = ${p.qty}, version = ${event.aggregateVersion} WHERE order_id = ${p.orderId}`,
    )
    if (updated === 0) {
      await tx.execute(sql`INSERT INTO ${table('order_view')} (order_id, status, qty, version) VALUES (${p.orderId}, ${p.status}, ${p.qty}, ${event.aggregateVersion})`)
    }
  },
  async intents(db, {table}) {
    const rows = await db.query<Row>(sql`SELECT id, version FROM ${table('orders')}`)
    return rows.flatMap((r) => Array.from({length: Number(r.version)}, (_, v) => ({aggregateId: String(r.id), aggregateVersion: v + 1})))
  },
  async check(db, {table}) {
    const orders = await db.query<Row>(sql`SELECT id, status, version FROM ${table('orders')}`)
    const view = new Map((await db.query<Row>(sql`SELECT order_id, status, version FROM ${table('order_view')}`)).map((r) => [String(r.order_id), r]))
    const problems: string[] = []
    for (const o of orders) {
      const v = view.get(String(o.id))
      view.delete(String(o.id))
      if (!v) problems.push(`${o.id}: committed (${o.status}) but missing downstream`)
      else if (Number(v.version) !== Number(o.version)) problems.push(`${o.id}: downstream at version ${v.version} (${v.status}), committed ${o.version} (${o.status})`)
    }
    for (const id of view.keys()) problems.push(`${id}: downstream but never committed`)
    return problems
  },
}

const REQUIRED = ['setup', 'write', 'effect', 'intents'] as const

/** Loads a user's scenario module: its default export (or the module itself) must have the Scenario shape. */
export async function loadScenario(path: string | undefined): Promise<{scenario: Scenario; path?: string}> {
  if (!path || path === 'orders') return {scenario: ordersScenario}
  const file = resolve(path)
  if (!existsSync(file)) throw new UsageError(`scenario module ${path} not found`, (o) => `Pass a path to an ES module, e.g. ${o('scenarioPath')} ./chaos-scenario.js`)
  let module: Record<string, unknown>
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>
  } catch (error) {
    throw new UsageError(`cannot load scenario ${path}: ${String((error as Error).message).split('\n')[0]}`, 'It must be an ES module (.js/.mjs) exporting the scenario')
  }
  const candidate = (module.default ?? module) as Partial<Scenario>
  const missing = REQUIRED.filter((k) => typeof candidate[k] !== 'function')
  if (missing.length) {
    throw new UsageError(`scenario ${path} has no ${missing.join(', ')} function(s)`, 'See the README section "outbox chaos" for the module shape')
  }
  return {
    path: file,
    scenario: {
      name: candidate.name ?? file.replace(/^.*[\\/]/, '').replace(/\.[cm]?js$/, ''),
      description: candidate.description,
      tables: Array.isArray(candidate.tables) ? candidate.tables : [],
      ops: typeof candidate.ops === 'function' ? candidate.ops : (size: number) => size,
      setup: candidate.setup!,
      write: candidate.write!,
      effect: candidate.effect!,
      intents: candidate.intents!,
      check: candidate.check,
    },
  }
}

/** The context handed to every scenario function for one run. */
export function scenarioContext(dialect: Dialect, prefix: string, ops: number): ScenarioContext {
  return {dialect, sql, raw, ops, table: (name) => raw(dialect.render.quoteIdent(`${prefix}_${name}`))}
}

export function intentKey(aggregateId: string, version: number | null | undefined): string {
  return `${aggregateId}#${version ?? ''}`
}
