import {existsSync, statSync} from 'node:fs'
import {Flags} from '@oclif/core'
import {duration, timePoint} from '../src/cli/flags.js'
import {destructiveFlags, OpsCommand, opsFlags} from '../src/cli/ops-command.js'
import type {ArchiveOptions, ArchiveOutput, ArchivePlan} from '../src/ops/archive.js'

export default class Archive extends OpsCommand {
  static override summary = 'Move published events created before a cutoff to the archive table (or delete them)'
  static override description = `Touches only events that are published, not failed, created before --before (exclusive) and published before now - --min-published-age (exclusive; default 24h), so consumers can still replay recent ones. Unpublished and failed events are never touched. Each batch copies its rows into the archive table and deletes them from the outbox in one transaction: a crash at any moment leaves every event in exactly one of the two tables. --delete purges instead of moving. --to-file appends every row as JSON Lines, synced to disk before its batch commits (after a crash a row may appear twice in the file, never zero times).

A partitioned outbox (init --partition-by): a range partition that ends at or before --before and holds only such events is taken out whole (PostgreSQL: DETACH PARTITION, CONCURRENTLY when the table has no DEFAULT partition; MySQL/MariaDB: EXCHANGE PARTITION with a staging table) and dropped, after its rows were copied into the archive unless --delete. A partition holding unpublished, failed or recently published events is never dropped and is listed with why; its eligible rows, and those of partitions not wholly before the cutoff and of the catch-all, go in batches. A run killed between taking a partition out and dropping it leaves it marked; the next run finishes it first. With --to-file every row goes in batches. Times: ISO-8601 with Z or an offset, a bare date (UTC), or a duration meaning ago on the database clock. Without a terminal it needs --yes; --dry-run changes nothing.

Exit codes: 0 done, 2 bad input or a confirmation answered no (nothing changed), an unreachable database, --timeout reached, a missing table or a batch rolled back (earlier batches stay committed), 130/143 stopped by SIGINT/SIGTERM after the batch in flight committed.`
  static override examples = [
    '<%= config.bin %> archive --before 30d --dry-run',
    '<%= config.bin %> archive --before 30d --yes',
    '<%= config.bin %> archive --before 2026-01-01 --to-file events-2025.jsonl --delete --yes',
    '<%= config.bin %> archive --before 7d --min-published-age 3d --batch 5000 --yes --json',
  ]
  static override flags = {
    ...opsFlags,
    ...destructiveFlags,
    before: timePoint({description: 'created_at before this time (exclusive): ISO-8601 or a duration meaning ago (30d)', required: true, helpValue: 'TIME'}),
    'min-published-age': duration({description: 'and published at least this long ago', default: '24h', helpValue: 'DURATION', allowZero: true}),
    delete: Flags.boolean({description: 'delete instead of moving to the archive table'}),
    'to-file': Flags.string({description: 'also append the rows to this JSON Lines file', helpValue: 'FILE'}),
  }

  async run(): Promise<ArchiveOutput> {
    const {flags} = await this.parse(Archive)
    const options: ArchiveOptions = {
      before: flags.before, // a duration stays text: read on the database clock
      minPublishedAgeMs: flags['min-published-age'],
      delete: flags.delete,
      toFile: flags['to-file'],
      batch: flags.batch,
    }
    const {archive, archiveWork, checkExportPath, nothingArchived, planArchive} = await import('../src/ops/archive.js')
    if (options.toFile) checkExportPath(options.toFile)
    this.requireYesWithoutTty(flags, 'archive')
    const settings = await this.connection(flags)
    const {renderArchive} = await import('../src/render/batch-result.js')
    const verb = options.delete ? 'delete' : 'archive'

    const result = await this.withDb(settings, (db) =>
      this.planConfirmRun(flags, {
        plan: () => planArchive(db, settings.tables, options),
        count: archiveWork,
        nothing: nothingArchived,
        announce: (plan) => `${verb}: ${plan.wouldArchive} published event(s) created before ${plan.before}, published before ${plan.publishedBefore}${whole(plan)}${appending(options.toFile)}`,
        question: (plan) => `${options.delete ? 'Delete' : 'Archive'} ${plan.wouldArchive} event(s)?`,
        progressVerb: options.delete ? 'deleted' : 'archived',
        // the cutoffs as planned, not re-evaluated against a later clock
        run: (plan, onProgress, signal) =>
          archive(db, settings.tables, {...options, dryRun: false, before: new Date(plan.before), publishedBefore: new Date(plan.publishedBefore), onProgress, signal}),
      }),
    )
    if (!this.jsonEnabled()) process.stdout.write(await renderArchive(result))
    return result
  }
}

/** A partitioned outbox: how many partitions go whole. */
function whole(plan: ArchivePlan): string {
  const p = plan.partitions
  return p && p.whole.length + p.unfinished.length > 0 ? `; ${p.whole.length + p.unfinished.length} whole partition(s) of them, the other ${p.batchedRows} in batches` : ''
}

/** The export file is appended to (a rerun after a crash continues it): say so when it holds lines already. */
function appending(file: string | undefined): string {
  if (!file || !existsSync(file)) return ''
  const bytes = statSync(file).size
  return bytes > 0 ? `; appending to ${file} (${bytes} bytes there already)` : ''
}
