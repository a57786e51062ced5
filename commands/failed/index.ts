import {Flags} from '@oclif/core'
import {positiveInt, timePoint} from '../../src/cli/flags.js'
import {OpsCommand, opsFlags} from '../../src/cli/ops-command.js'
import type {FailedList} from '../../src/ops/failed.js'

export default class Failed extends OpsCommand {
  static override summary = 'List failed events (exhausted their attempts) with their last error'
  static override description = `Newest failure first. The table shows the first line of last_error, truncated; --json and "outbox failed show ID" give it in full. Failed events are never claimed again until replayed: outbox replay --failed (or --ids).

Exit codes: 0 listed (also when none match), 2 bad input, an unreachable database or a missing table.`
  static override examples = [
    '<%= config.bin %> failed --url postgres://app@db/app',
    '<%= config.bin %> failed --type order.created --since 2h',
    '<%= config.bin %> failed --since 2026-01-31T00:00:00Z --limit 500 --json',
    '<%= config.bin %> failed show 0190f5e4-6c1a-7b9e-8d2f-3a4b5c6d7e8f',
  ]
  static override flags = {
    ...opsFlags,
    type: Flags.string({description: 'only this event_type (repeatable)', multiple: true, helpValue: 'TYPE'}),
    since: timePoint({
      description: 'failed at or after this time (inclusive): ISO-8601 with Z or an offset, a bare date (UTC midnight), or a duration meaning ago on the database clock (2h, 7d)',
      helpValue: 'TIME',
    }),
    limit: positiveInt({description: 'list at most N events (1-100000)', default: '50', helpValue: 'N', max: 100_000}),
  }

  async run(): Promise<FailedList> {
    const {flags} = await this.parse(Failed)
    const settings = await this.connection(flags)
    const {listFailed} = await import('../../src/ops/failed.js')
    const list = await this.withDb(settings, (db) => listFailed(db, settings.tables, {types: flags.type, since: flags.since, limit: flags.limit}), {readOnly: true})
    if (!this.jsonEnabled()) {
      const {renderFailedList} = await import('../../src/render/events.js')
      process.stdout.write(await renderFailedList(list, Boolean(flags.type?.length) || flags.since !== undefined))
    }
    return list
  }
}
