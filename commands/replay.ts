import {Flags} from '@oclif/core'
import {idList, timePoint} from '../src/cli/flags.js'
import {destructiveFlags, OpsCommand, opsFlags} from '../src/cli/ops-command.js'
import {UsageError} from '../src/core/errors.js'
import type {ReplayOutput, ReplaySelection} from '../src/ops/replay.js'

export default class Replay extends OpsCommand {
  static override summary = 'Make events deliverable again (a created_at range, failed events, or ids), keeping their ids'
  static override description = `Clears published_at, failed_at, the lease and last_error and resets attempts to 0; the id stays, so consumers deduplicate a second delivery. The range is created_at from --since (inclusive) to --until (exclusive). Times: ISO-8601 with Z or an offset, a bare date (UTC midnight), or a duration meaning ago on the database clock (30m, 2h, 7d). An event leased by a live relay is skipped and reported, never put in flight twice. --from-archive moves matching rows back from the archive table into the outbox as pending. Runs in batches (--batch), each its own short transaction; progress on stderr. Without a terminal it needs --yes; --dry-run prints the count and a sample and changes nothing.

Exit codes: 0 done (leased rows skipped are reported, not an error), 2 bad input or a confirmation answered no (nothing changed), an unreachable database, --timeout reached, a missing table or a batch rolled back (earlier batches stay committed), 130/143 stopped by SIGINT/SIGTERM after the batch in flight committed.`
  static override examples = [
    '<%= config.bin %> replay --failed --dry-run',
    '<%= config.bin %> replay --failed --type order.created --yes',
    '<%= config.bin %> replay --since 2h --type order.created --yes',
    '<%= config.bin %> replay --since 2026-01-31T00:00:00Z --until 2026-02-01T00:00:00Z --aggregate order-42',
    '<%= config.bin %> replay --ids 0190f5e4-6c1a-7b9e-8d2f-3a4b5c6d7e8f,0190f5e4-6c1a-7b9e-8d2f-3a4b5c6d7e90 --yes',
    '<%= config.bin %> replay --from-archive --since 7d --type invoice.issued --yes --json',
  ]
  static override flags = {
    ...opsFlags,
    ...destructiveFlags,
    since: timePoint({description: 'created_at at or after (inclusive); required unless --ids or --failed', helpValue: 'TIME'}),
    until: timePoint({description: 'created_at before (exclusive)', helpValue: 'TIME'}),
    type: Flags.string({description: 'only this event_type (repeatable)', multiple: true, helpValue: 'TYPE'}),
    aggregate: Flags.string({description: 'only this aggregate_id', helpValue: 'ID'}),
    'aggregate-type': Flags.string({description: 'only this aggregate_type', helpValue: 'TYPE'}),
    failed: Flags.boolean({description: 'only failed events'}),
    ids: idList({description: 'only these event ids (comma-separated)', helpValue: 'ID,ID'}),
    'from-archive': Flags.boolean({description: 'move the matching events back from the archive table'}),
  }

  async run(): Promise<ReplayOutput> {
    // the flags are parsed and checked before anything connects: bad input changes nothing
    const {flags} = await this.parse(Replay)
    const selection: ReplaySelection = {
      since: flags.since,
      until: flags.until,
      types: flags.type,
      aggregateId: flags.aggregate,
      aggregateType: flags['aggregate-type'],
      failedOnly: flags.failed,
      ids: flags.ids && [...flags.ids],
      fromArchive: flags['from-archive'],
    }
    // the usage line for the commonest mistake, before the library (and Kysely) is loaded
    if (flags.since === undefined && flags.ids === undefined && !flags.failed) {
      throw new UsageError('replay needs --since, --ids or --failed', 'e.g. outbox replay --since 2h, or --failed, or --ids ID,ID')
    }
    const {checkSelection, nothingReplayed, planReplay, replay} = await import('../src/ops/replay.js')
    checkSelection(selection)
    this.requireYesWithoutTty(flags, 'replay')
    const settings = await this.connection(flags)
    const [{renderReplay}, {cell}] = await Promise.all([import('../src/render/batch-result.js'), import('../src/render/events.js')])

    const result = await this.withDb(settings, (db) =>
      this.planConfirmRun(flags, {
        plan: () => planReplay(db, settings.tables, selection),
        count: (plan) => plan.wouldReplay,
        nothing: nothingReplayed,
        announce: (plan) =>
          `replay: ${plan.wouldReplay} event(s) to make deliverable again (${perType(plan.byType, cell)})${plan.skippedLeased ? `, ${plan.skippedLeased} leased (skipped)` : ''}${plan.alreadyInOutbox ? `, ${plan.alreadyInOutbox} already in the outbox (left in the archive)` : ''}`,
        question: (plan) => `Replay ${plan.wouldReplay} event(s)?`,
        progressVerb: 'replayed',
        // the range as planned: a relative --since must not move between the count and the run
        run: (plan, onProgress, signal) =>
          replay(db, settings.tables, {...selection, since: plan.since ?? undefined, until: plan.until ?? undefined, batch: flags.batch, onProgress, signal}),
      }),
    )
    if (!this.jsonEnabled()) process.stdout.write(await renderReplay(result))
    return result
  }
}

function perType(byType: Record<string, number>, cell: (text: string, width: number) => string): string {
  return Object.entries(byType)
    .map(([t, n]) => `${cell(t, 40)} ${n}`)
    .join(', ')
}
