// Idempotent consumption: in one local transaction, record (consumer, event id) in the inbox
// and apply the effect. A duplicate id is skipped; with checkVersion a stale aggregate
// version (lower than or equal to one already applied) is recorded but not applied.
import {createHash} from 'node:crypto'
import type {TableNames} from '../dialects/index.js'
import {failpoint} from './core/failpoints.js'
import type {Db, Queryable} from './db/index.js'
import {runUnderLock} from './db/lock.js'
import {UsageError} from './core/errors.js'
import {resolveTables} from './schema/tables.js'

export type ConsumeOutcome = 'applied' | 'duplicate' | 'stale'

export interface ConsumedEvent {
  id: string
  aggregateType?: string | null
  aggregateId?: string | null
  aggregateVersion?: number | null
}

export interface ConsumerOptions {
  /** the consumer's name: dedupe is per (consumer, event id) */
  consumer: string
  tables?: Partial<TableNames>
  /** skip events whose aggregate_version is not newer than the last one applied */
  checkVersion?: boolean
}

export class Consumer {
  private readonly names: TableNames

  constructor(
    private readonly db: Db,
    private readonly options: ConsumerOptions,
  ) {
    if (!options.consumer) throw new UsageError('consumer name is required', "e.g. new Consumer(db, {consumer: 'inventory'})")
    const t = options.tables ?? {}
    this.names = resolveTables({table: t.outbox, inboxTable: t.inbox, archiveTable: t.archive, schema: t.schema}, db.dialect)
  }

  /** Runs `effect` at most once per event id for this consumer, atomically with the inbox row. */
  async handle(event: ConsumedEvent, effect: (tx: Queryable) => Promise<void>): Promise<ConsumeOutcome> {
    const {dialect} = this.db
    const version = event.aggregateVersion ?? null
    const checked = this.options.checkVersion && version !== null && event.aggregateId ? {version, aggregateId: event.aggregateId} : undefined
    const handle = async (tx: Queryable): Promise<ConsumeOutcome> => {
      let stale = false
      if (checked) {
        const [row] = await tx.query<{max_version: number | string | null}>(
          dialect.events.inboxMaxVersion(this.names, this.options.consumer, event.aggregateType ?? null, checked.aggregateId),
        )
        stale = row?.max_version != null && Number(row.max_version) >= checked.version
      }
      const inserted = await tx.execute(
        dialect.events.inboxInsert(this.names, {
          consumer: this.options.consumer,
          eventId: event.id,
          aggregateType: event.aggregateType ?? null,
          aggregateId: event.aggregateId ?? null,
          aggregateVersion: version,
        }),
      )
      if (inserted === 0) return 'duplicate'
      if (stale) return 'stale'
      await effect(tx)
      failpoint('consumer.before-commit')
      return 'applied'
    }
    if (!checked) return this.db.transaction(handle)
    // one aggregate's events are checked one consumer at a time: else two handlers read the
    // same max version and both apply, the older over the newer
    const key = `outbox:${createHash('sha1').update(JSON.stringify([this.options.consumer, event.aggregateType ?? null, checked.aggregateId])).digest('hex').slice(0, 40)}`
    return runUnderLock(this.db, {key, waitSeconds: 30, busy: `another consumer of aggregate ${checked.aggregateId}`}, handle)
  }
}
