import {Flags} from '@oclif/core'
import {idsFrom, SqlCommand, sqlFlags} from '../../src/cli/sql-command.js'
import {releaseSql} from '../../src/sql-text.js'
import {defaultOwner} from '../../src/relay/owner.js'

export default class SqlRelease extends SqlCommand {
  static override summary = 'Print the statement a stopping relay runs to give back leases it claimed but did not send'
  static override examples = ['<%= config.bin %> sql release --dialect postgres --owner relay-1 --ids 0190c3c2-...']
  static override flags = {
    ...sqlFlags,
    ids: Flags.string({description: 'comma-separated event ids (default: two example ids)'}),
    owner: Flags.string({description: 'lease owner (default host:pid)'}),
  }

  async run() {
    const {flags} = await this.parse(SqlRelease)
    const {dialect, names} = this.target(flags)
    return this.emit(dialect, releaseSql(dialect, names, idsFrom(flags.ids), flags.owner ?? defaultOwner(), flags.params ? 'params' : 'inline'))
  }
}
