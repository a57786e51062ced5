import {idsFlag, idsOrExamples, SqlCommand, sqlFlags, SQL_EXIT_CODES} from '../../src/cli/sql-command.js'
import {markPublishedSql} from '../../src/relay/sql-text.js'

export default class SqlMarkPublished extends SqlCommand {
  static override summary = "Print the relay's mark-published statement (one batched UPDATE for a batch's successes)"
  static override description = SQL_EXIT_CODES
  static override examples = [
    '<%= config.bin %> sql mark-published --dialect postgres --ids 0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f,0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e90',
    '<%= config.bin %> sql mark-published --dialect mysql --params',
  ]
  static override flags = {
    ...sqlFlags,
    ids: idsFlag,
  }

  async run() {
    const {flags} = await this.parse(SqlMarkPublished)
    const {dialect, names} = await this.target(flags)
    return this.emit(dialect, markPublishedSql(dialect, names, idsOrExamples(flags.ids), flags.params ? 'params' : 'inline'))
  }
}
