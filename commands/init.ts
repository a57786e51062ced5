import {Flags} from '@oclif/core'
import {OutboxCommand} from '../src/cli/base.js'
import {connectionFlags, dialectFlag, tableFlags, tableNamesFrom} from '../src/cli/flags.js'
import {dialectOfName, resolveConnection} from '../src/config.js'
import {UsageError} from '../src/core/errors.js'
import {applyInit, initPlan, PartitionMigrationNeeded, renderInitScript, type InitResult} from '../src/schema/init.js'
import {PARTITION_INTERVALS} from '../src/schema/partition-ranges.js'
import {resolveTables} from '../src/schema/tables.js'

/** `--json`: what --apply did, or the printed script (schemas/output/init.schema.json). */
export type InitOutput = InitResult | {dialect: string; sql: string}

export default class Init extends OutboxCommand {
  static override summary = 'Print or apply the idempotent DDL for the outbox, inbox and archive tables'
  static override description = `Without --apply, prints DDL that runs unchanged in psql, mariadb/mysql or sqlite3. With --url and --apply, creates what is missing (dialect from the URL) and reports each object; a second run reports that everything is up to date and changes nothing.

--partition-by day|week|month (PostgreSQL, MySQL/MariaDB) makes the outbox a table partitioned by created_at, its primary key (id, created_at), with ranges from the current period to a week ahead and a catch-all partition for rows past the last one; keep ranges ahead with outbox partitions --ensure. An outbox that exists unpartitioned is not converted: init prints the migration steps and exits 2.

Exit codes: 0 printed, or applied (created, or up to date already), 2 bad input, --partition-by on SQLite or on an existing unpartitioned outbox, an unreachable database, or a statement the database refused.`
  static override examples = [
    '<%= config.bin %> init --dialect postgres',
    '<%= config.bin %> init --dialect mysql --table orders_outbox --no-archive > outbox.sql',
    '<%= config.bin %> init --url postgres://postgres@127.0.0.1:5432/app --apply',
    '<%= config.bin %> init --url sqlite:./app.db --apply --json',
    '<%= config.bin %> init --url postgres://postgres@127.0.0.1:5432/app --partition-by day --apply',
  ]
  static override enableJsonFlag = true
  static override flags = {
    dialect: dialectFlag,
    ...connectionFlags,
    ...tableFlags,
    apply: Flags.boolean({description: 'create the objects on --url instead of printing the DDL'}),
    inbox: Flags.boolean({description: 'include the inbox (processed events) table', default: true, allowNo: true}),
    archive: Flags.boolean({description: 'include the archive table', default: true, allowNo: true}),
    'partition-by': Flags.string({description: 'partition the outbox by created_at (PostgreSQL, MySQL/MariaDB)', options: [...PARTITION_INTERVALS]}),
  }

  async run(): Promise<InitOutput> {
    const {flags} = await this.parse(Init)
    const options = {inbox: flags.inbox, archive: flags.archive, partitionBy: flags['partition-by'] as (typeof PARTITION_INTERVALS)[number] | undefined}
    if (!flags.apply) {
      if (!flags.dialect && !flags.url) throw new UsageError('init needs --dialect (to print) or --url with --apply', 'e.g. outbox init --dialect postgres')
      const dialect = flags.dialect ? await dialectOfName(flags.dialect) : (await resolveConnection({url: flags.url, ...tableNamesFrom(flags)})).dialect
      const names = resolveTables(tableNamesFrom(flags), dialect)
      const script = renderInitScript(dialect, initPlan(dialect, names, options))
      if (!this.jsonEnabled()) process.stdout.write(script)
      return {dialect: dialect.name, sql: script}
    }
    const settings = await resolveConnection({url: flags.url, config: flags.config, ...tableNamesFrom(flags)})
    if (flags.dialect && (await dialectOfName(flags.dialect)).name !== settings.dialect.name) {
      throw new UsageError(`--dialect ${flags.dialect} does not match the URL (${settings.dialect.name})`, 'Drop --dialect: the URL decides')
    }
    this.secretUrl = settings.url
    const {withDb} = await import('../src/db/index.js')
    const result = await withDb(settings.url, (db) => applyInit(db, settings.tables, options)).catch((error) => {
      if (error instanceof PartitionMigrationNeeded) process.stdout.write(`${error.steps.join('\n')}\n`)
      throw error
    })
    for (const s of result.statements) this.log(`${s.status === 'created' ? 'created ' : 'exists  '} ${s.kind} ${s.name}`)
    this.log(result.upToDate ? 'up to date: nothing changed' : `created ${result.statements.filter((s) => s.status === 'created').length} object(s)`)
    return result
  }
}
