import {Flags} from '@oclif/core'
import {duration, eventIds, positiveInt} from '../../src/cli/flags.js'
import {SQL_EXIT_CODES, SqlCommand, sqlFlags} from '../../src/cli/sql-command.js'
import {initialMark} from '../../src/relay/claim-mark.js'
import {claimSql, transactionClaimSql} from '../../src/relay/sql-text.js'
import {UsageError} from '../../src/core/errors.js'
import {defaultOwner} from '../../src/relay/owner.js'

export default class SqlClaim extends SqlCommand {
  static override summary = "Print the relay's claim statement for a dialect"
  static override description = `Exactly what the relay runs: at most --batch rows, oldest created_at first, unpublished, not failed, lease absent or lapsed by the database clock, skipping rows other sessions hold; from the relay's low-water mark on with --claim-from mark (created_at >= the mark, printed as the full claim a relay starts with: -infinity on PostgreSQL, where it is the default, --claim-from start dropping it; 1000-01-01 on MySQL/MariaDB, where it is opt-in). With --lease-by transaction (PostgreSQL), the claim's transaction: it locks the rows and writes nothing, and once the batch is published the mark (of the --carry ids) and COMMIT end it. With --carry, the claim also marks the previous batch's events published, in the same commit, as the relay runs every claim after its first (one commit per batch). Values are inlined so the output runs as-is in psql, mariadb/mysql or sqlite3 (for MySQL the whole READ COMMITTED transaction); --params prints the statements with their bound parameters.

${SQL_EXIT_CODES}`
  static override examples = [
    '<%= config.bin %> sql claim --dialect postgres',
    '<%= config.bin %> sql claim --dialect mysql --batch 50 --lease 1m --owner relay-1 | mariadb app',
    '<%= config.bin %> sql claim --dialect sqlite --params',
    '<%= config.bin %> sql claim --dialect postgres --ordering aggregate --json',
    '<%= config.bin %> sql claim --dialect postgres --lease-by transaction',
    '<%= config.bin %> sql claim --dialect mysql --carry 0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f,0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e90',
  ]
  static override flags = {
    ...sqlFlags,
    batch: positiveInt({description: 'rows per claim', default: '100', max: 100_000}),
    lease: duration({description: 'lease length (e.g. 30s, 2m)', default: '30s'}),
    owner: Flags.string({description: 'lease owner written to lease_owner (default host:pid)'}),
    ordering: Flags.string({description: 'aggregate: never claim past an older unpublished event of the same aggregate', options: ['none', 'aggregate'], default: 'none'}),
    carry: eventIds({description: "comma-separated ids of the previous batch's published events: the claim marks them published in its own commit"}),
    'lease-by': Flags.string({description: "row: the claim writes a lease on its rows; transaction (PostgreSQL): the claim's transaction holds them, and the mark commits it", options: ['row', 'transaction'], default: 'row'}),
    'claim-from': Flags.string({description: "mark: the claim starts at the relay's low-water mark, printed as the full claim's (default on PostgreSQL, opt-in on MySQL/MariaDB); start: at the start of the pending index (default elsewhere)", options: ['mark', 'start']}),
  }

  async run() {
    const {flags} = await this.parse(SqlClaim)
    const {dialect, names} = await this.target(flags)
    const options = {
      batch: flags.batch,
      leaseMs: flags.lease,
      owner: flags.owner ?? defaultOwner(),
      ordering: flags.ordering as 'none' | 'aggregate',
      from: initialMark(dialect, flags['claim-from'] as 'mark' | 'start' | undefined),
      ...(flags.carry ? {mark: {ids: [...flags.carry]}} : {}),
    }
    if (flags['lease-by'] === 'transaction') {
      const printed = transactionClaimSql(dialect, names, options, flags.params ? 'params' : 'inline')
      if (!printed) throw new UsageError(`--lease-by transaction is PostgreSQL only (${dialect.displayName} relays lease rows)`, 'Drop --lease-by, or use --dialect postgres')
      return this.emit(dialect, printed)
    }
    return this.emit(dialect, claimSql(dialect, names, options, flags.params ? 'params' : 'inline'))
  }
}
