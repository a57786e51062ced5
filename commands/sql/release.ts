import {Flags} from '@oclif/core'
import {idsFlag, idsOrExamples, leaseOwner, SqlCommand, sqlFlags, SQL_EXIT_CODES} from '../../src/cli/sql-command.js'
import {releaseSql} from '../../src/relay/sql-text.js'

export default class SqlRelease extends SqlCommand {
  static override summary = 'Print the statement a stopping relay runs to give back leases it claimed but did not send'
  static override description = SQL_EXIT_CODES
  static override examples = ['<%= config.bin %> sql release --dialect postgres --owner relay-1 --ids 0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f']
  static override flags = {
    ...sqlFlags,
    ids: idsFlag,
    owner: Flags.string({description: 'the lease_owner the claim wrote (required unless --params): only its leases are given back'}),
  }

  async run() {
    const {flags} = await this.parse(SqlRelease)
    const {dialect, names} = await this.target(flags)
    return this.emit(dialect, releaseSql(dialect, names, idsOrExamples(flags.ids), leaseOwner(flags.owner, flags.params), flags.params ? 'params' : 'inline'))
  }
}
