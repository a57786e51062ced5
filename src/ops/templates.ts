// A statement every batch sends again with only some values changed (the keyset cursor, the
// batch's last row, a lease instant) is built and compiled once per shape, a Template, and
// each batch binds its own values by parameter position. Those values are passed to Kysely as
// markers (BatchSlot objects): Kysely keeps each value it is given as one parameter, so a
// marker's places are where CompiledQuery.parameters holds that very object. Nothing reads the
// compiled text.
import {precompiled, type Sql} from '../../dialects/sql.js'
import type {Compilable} from './statements.js'

/** The values that change from batch to batch, by name. */
export interface BatchValues {
  /** the cursor: the previous batch's last row, created_at as exactTime writes it */
  cursor_at: string
  cursor_id: string
  /** the batch's last row (summary-then-change: from its summary) */
  last_at: string
  last_id: string
  /** how many rows the change must take */
  batch_rows: number
  /** the database instant the summary judged leases at */
  read_at: string
  /** the locator span of the rows to change */
  span_lo: number | string
  span_hi: number | string
}

export type SlotName = keyof BatchValues

/** A marker passed to Kysely where a per-batch value goes. It refuses to become text: it can only be a parameter. */
export class BatchSlot<Name extends SlotName = SlotName> {
  constructor(readonly name: Name) {}

  [Symbol.toPrimitive](): never {
    throw new TypeError(`batch value ${this.name} was written into SQL text; pass it as a value`)
  }
}

/** The markers, one per value: a statement names a per-batch value by passing its marker. */
export const slot: {readonly [Name in SlotName]: BatchSlot<Name>} = {
  cursor_at: new BatchSlot('cursor_at'),
  cursor_id: new BatchSlot('cursor_id'),
  last_at: new BatchSlot('last_at'),
  last_id: new BatchSlot('last_id'),
  batch_rows: new BatchSlot('batch_rows'),
  read_at: new BatchSlot('read_at'),
  span_lo: new BatchSlot('span_lo'),
  span_hi: new BatchSlot('span_hi'),
}

export function isBatchSlot(value: unknown): value is BatchSlot {
  return value instanceof BatchSlot
}

/** A statement compiled once, with the parameter positions of its markers. */
export class Template {
  private constructor(
    private readonly statement: Sql,
    /** [parameter index, value name] of each marker */
    private readonly places: readonly (readonly [number, SlotName])[],
  ) {}

  static of(query: Compilable): Template {
    const {sql, parameters} = query.compile()
    const statement = precompiled(sql, parameters)
    const places: [number, SlotName][] = []
    statement.values.forEach((value, i) => {
      if (isBatchSlot(value)) places.push([i, value.name])
    })
    return new Template(statement, places)
  }

  /** The statement with this batch's values in the markers' places: the same text (chunks) every batch. */
  bind(values: Readonly<Partial<BatchValues>>): Sql {
    if (this.places.length === 0) return this.statement
    const bound = [...this.statement.values]
    for (const [index, name] of this.places) {
      const value = values[name]
      if (value === undefined) throw new Error(`statement slot ${name} has no value`)
      bound[index] = value
    }
    return this.statement.withValues(bound)
  }
}
