import {Flags} from '@oclif/core'
import {duration} from '../src/cli/flags.js'
import {OpsCommand, opsFlags} from '../src/cli/ops-command.js'
import {UsageError} from '../src/core/errors.js'
import type {EnsureResult} from '../src/ops/partitions-ensure.js'
import type {PartitionsReport} from '../src/ops/partitions.js'

/** `--json`: the list, or what --ensure added (schemas/output/partitions.schema.json). */
export type PartitionsOutput = PartitionsReport | EnsureResult

export default class Partitions extends OpsCommand {
  static override summary = 'List the partitions of a partitioned outbox, or add the missing ones ahead (--ensure)'
  static override description = `For an outbox made by outbox init --partition-by (PostgreSQL, MySQL/MariaDB). Lists each partition's range, rows, size and oldest unpublished event; the catch-all partition (DEFAULT on PostgreSQL, MAXVALUE on MySQL) holds the rows past the last range, so an insert never fails for want of a partition.

--ensure 14d adds the ranges missing from the last one up to 14 days ahead by the database clock. It takes the named lock init --apply takes, so every replica of a deploy can run it at start-up: one adds, the others find them there. Rows already in the catch-all for a range being added move into it in the same transaction. outbox status warns when the last range ends within 3 days.

Exit codes: 0 listed, or ensured (added, or nothing missing), 2 bad input, a table that is not partitioned, SQLite, an unreachable database or a statement the database refused.`
  static override examples = [
    '<%= config.bin %> partitions --url postgres://app@db/app',
    '<%= config.bin %> partitions --ensure 14d',
    '<%= config.bin %> partitions --ensure 30d --dry-run --json',
  ]
  static override flags = {
    ...opsFlags,
    ensure: duration({description: 'add the partitions missing up to this far ahead of now (e.g. 14d)', helpValue: 'DURATION'}),
    'dry-run': Flags.boolean({description: 'with --ensure: print the partitions it would add and the rows it would move, and change nothing'}),
  }

  async run(): Promise<PartitionsOutput> {
    const {flags} = await this.parse(Partitions)
    const aheadMs = flags.ensure
    if (flags['dry-run'] && aheadMs === undefined) throw new UsageError('--dry-run plans an --ensure', 'e.g. outbox partitions --ensure 14d --dry-run')
    const settings = await this.connection(flags)
    if (aheadMs === undefined) {
      const {listPartitions} = await import('../src/ops/partitions.js')
      const report = await this.withDb(settings, (db) => listPartitions(db, settings.tables), {readOnly: true})
      if (!this.jsonEnabled()) process.stdout.write(await (await import('../src/render/partitions.js')).renderPartitions(report))
      return report
    }
    const {ensurePartitions} = await import('../src/ops/partitions-ensure.js')
    const result = await this.withDb(settings, (db) => ensurePartitions(db, settings.tables, {aheadMs, dryRun: flags['dry-run']}))
    if (!this.jsonEnabled()) process.stdout.write((await import('../src/render/partitions.js')).renderEnsure(result))
    return result
  }
}
