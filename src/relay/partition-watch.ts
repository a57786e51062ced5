// The relay's warning ahead of a partitioned outbox's last range: status's own check
// (partitionsAhead, the same threshold), read at start and then every CHECK_MS, and logged
// once when the last range comes near (or passes), once when it is ahead again: not on every
// poll. The gauge (outbox_partition_ahead_seconds) is status's, read at each scrape.
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {partitionsAhead} from '../ops/partitions.js'
import {databaseNow} from '../ops/query.js'
import type {RelayLogger} from './relay.js'

/** ranges are a day long at the shortest and the threshold is days: one catalog read a few minutes is plenty */
export const CHECK_MS = 5 * 60_000

type State = 'ahead' | 'near' | 'passed'

export class PartitionWatch {
  private state: State = 'ahead'
  private timer: NodeJS.Timeout | undefined
  private checking = false

  constructor(
    private readonly db: Db,
    private readonly names: TableNames,
    private readonly logger: RelayLogger,
  ) {}

  /**
   * One check; logs only when the state changed. False: the table is not partitioned. A
   * database error is the relay loop's to report: skipped here.
   */
  async check(): Promise<boolean> {
    if (!this.db.dialect.ddl.partitioning) return false
    const ahead = await databaseNow(this.db)
      .then((now) => partitionsAhead(this.db, this.names, now))
      .catch(() => null)
    if (ahead === null) return true
    if (ahead === undefined) return false
    const state: State = !ahead.warning ? 'ahead' : ahead.secondsLeft <= 0 ? 'passed' : 'near'
    if (state !== this.state) {
      this.state = state
      const fields = {lastEndsAt: ahead.lastEndsAt, secondsLeft: ahead.secondsLeft}
      if (ahead.warning) this.logger.warn(ahead.warning, fields)
      else this.logger.info('partitions ahead again', fields)
    }
    return true
  }

  /** checks now, and every `everyMs` until stop() where the table is partitioned */
  async start(everyMs = CHECK_MS): Promise<void> {
    if (!(await this.check())) return
    // one check at a time: a slow catalog read (behind --ensure's DDL) must not pile up reads on the relay's pool
    this.timer = setInterval(() => {
      if (this.checking) return
      this.checking = true
      void this.check().finally(() => (this.checking = false))
    }, everyMs)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
  }
}
