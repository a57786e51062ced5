// What every check gets: the scratch table, extra sessions (each its own connection), and the
// claim under test run through the dialect's plan (src/relay/claim.ts), never a copy of it.
import {randomUUID} from 'node:crypto'
import {raw, sql, type ClaimOptions, type ClaimPlan, type Dialect, type TableNames} from '../../dialects/index.js'
import {openDb, type Db, type Queryable} from '../db/index.js'
import {claimOn, type ClaimedEvent} from '../relay/claim.js'
import {OutboxError} from '../core/errors.js'
import type {VerifyOptions} from './types.js'

export interface HeldClaim {
  events: ClaimedEvent[]
  /** commits the held claim transaction */
  release(): Promise<void>
}

export class Interrupted extends OutboxError {
  /** exitCode: 130 (SIGINT) unless the command knows better (143 for SIGTERM, 2 after --timeout) */
  constructor(exitCode = 130) {
    super('verify was interrupted', 'The scratch table was dropped; run it again', exitCode)
  }
}

export class VerifyContext {
  readonly dialect: Dialect
  private readonly sessions: Db[] = []
  private readonly holds = new Set<HeldClaim>()
  /** progress notes from inside the running check (set by the runner) */
  onNote?: (note: string) => void

  constructor(
    readonly url: string,
    readonly db: Db,
    readonly names: TableNames,
    readonly version: string,
    readonly options: VerifyOptions,
  ) {
    this.dialect = db.dialect
  }

  get table() {
    return raw(this.dialect.render.table(this.names, 'outbox'))
  }

  throwIfAborted(): void {
    if (this.options.signal?.aborted) throw new Interrupted()
  }

  /** A new connection (pool of one), closed when verify ends. */
  async session(busyTimeoutMs?: number): Promise<Db> {
    this.throwIfAborted()
    const session = await openDb(this.url, {poolSize: 1, busyTimeoutMs})
    this.sessions.push(session)
    for (const statement of this.options.sessionSetup ?? []) await session.execute(statement)
    return session
  }

  /** The claim as the relay starts it: from the dialect's low-water mark where it has one (its `none`, a full claim). */
  plan(options: ClaimOptions): ClaimPlan {
    return (this.options.claimPlan ?? this.dialect.relay.claim)(this.names, {from: this.dialect.relay.claimMark?.none, ...options})
  }

  /** One claim in its own transaction; lockTimeoutMs makes a lock wait an error instead of a hang. */
  async claim(session: Db, options: ClaimOptions, lockTimeoutMs?: number): Promise<ClaimedEvent[]> {
    this.throwIfAborted()
    const plan = this.plan(options)
    const lockTimeout = lockTimeoutMs === undefined ? undefined : this.dialect.verify.lockTimeout(lockTimeoutMs)
    // As claimBatch runs it: one statement in autocommit (a carried mark of its own: both in one
    // transaction). SQLite: an explicit transaction held across an await would deadlock two
    // connections in one thread on the busy handler.
    if (plan.kind === 'update-returning' && !plan.mark && !lockTimeout) return claimOn(session, this.dialect, plan)
    return session.transaction(async (tx) => {
      if (lockTimeout) await tx.execute(lockTimeout)
      return claimOn(tx, this.dialect, plan)
    })
  }

  /** Claims and keeps the transaction (and its row locks) open until release(). */
  async hold(session: Db, options: ClaimOptions): Promise<HeldClaim> {
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let claimed!: (events: ClaimedEvent[]) => void
    let failed!: (error: unknown) => void
    const ready = new Promise<ClaimedEvent[]>((resolve, reject) => ((claimed = resolve), (failed = reject)))
    const done = session.transaction(async (tx) => {
      claimed(await claimOn(tx, this.dialect, this.plan(options)))
      await released
    })
    done.catch(failed)
    const events = await ready
    const held: HeldClaim = {
      events,
      release: async () => {
        this.holds.delete(held)
        release()
        await done
      },
    }
    this.holds.add(held)
    return held
  }

  async setLockTimeout(tx: Queryable, ms?: number): Promise<void> {
    const statement = ms === undefined ? undefined : this.dialect.verify.lockTimeout(ms)
    if (statement) await tx.execute(statement)
  }

  async reset(): Promise<void> {
    await this.db.execute(sql`DELETE FROM ${this.table}`)
  }

  /** Inserts n events with the producer's own INSERT; returns their ids in claim order. */
  async seed(n: number): Promise<string[]> {
    for (let start = 0; start < n; start += 500) {
      this.throwIfAborted()
      await this.db.transaction(async (tx) => {
        for (let i = start; i < Math.min(n, start + 500); i++) await tx.execute(this.insert(i))
      })
    }
    const rows = await this.db.query<{id: string}>(
      sql`SELECT id FROM ${this.table} WHERE published_at IS NULL AND lease_owner IS NULL ORDER BY created_at, id`,
    )
    return rows.map((r) => String(r.id))
  }

  insert(i: number) {
    return this.dialect.events.insertEvent(this.names, {
      id: randomUUID(),
      eventType: 'outbox.verify',
      aggregateType: null,
      aggregateId: `verify-${i}`,
      aggregateVersion: null,
      payload: JSON.stringify({n: i}),
      headers: null,
    })
  }

  async count(where: string): Promise<number> {
    const rows = await this.db.query<{n: number | string}>(sql`SELECT COUNT(*) AS n FROM ${this.table} WHERE ${raw(where)}`)
    return Number(rows[0].n)
  }

  /** Releases held claims and closes every extra session (their transactions end with them). */
  async closeSessions(): Promise<void> {
    await Promise.allSettled([...this.holds].map((h) => h.release()))
    await Promise.allSettled(this.sessions.splice(0).map((s) => s.close()))
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), {once: true})
  })
}
