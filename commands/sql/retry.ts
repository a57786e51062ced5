import {Flags} from '@oclif/core'
import {duration, eventId, nonNegativeInt} from '../../src/cli/flags.js'
import {leaseOwner, SqlCommand, sqlFlags, SQL_EXIT_CODES} from '../../src/cli/sql-command.js'
import {retrySql} from '../../src/relay/sql-text.js'

export default class SqlRetry extends SqlCommand {
  static override summary = "Print the relay's retry statement: release with backoff, or fail after max attempts"
  static override description = `Releases the lease with lease_until set to the next attempt time (the claim honours it), records the error, and sets failed_at once attempts reach --max-attempts. Only the lease owner's update applies, so a relay whose lease lapsed cannot fail an event another relay holds.

${SQL_EXIT_CODES}`
  static override examples = [
    '<%= config.bin %> sql retry --dialect postgres --id 0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f --owner relay-1 --delay 30s --error "503 from broker"',
    '<%= config.bin %> sql retry --dialect sqlite --params',
  ]
  static override flags = {
    ...sqlFlags,
    id: eventId({description: 'event id', default: '00000000-0000-0000-0000-000000000001'}),
    owner: Flags.string({description: 'the lease_owner the claim wrote (required unless --params): only its lease is changed'}),
    delay: duration({description: 'backoff until the next attempt', default: '1s', allowZero: true}),
    error: Flags.string({description: 'error text to record', default: 'publish failed'}),
    'max-attempts': nonNegativeInt({description: 'attempts after which the event is failed (0 = fail now)', default: '10', max: 1_000_000}),
  }

  async run() {
    const {flags} = await this.parse(SqlRetry)
    const {dialect, names} = await this.target(flags)
    const input = {
      id: flags.id,
      delayMs: flags.delay,
      error: flags.error,
      maxAttempts: flags['max-attempts'],
      owner: leaseOwner(flags.owner, flags.params),
    }
    return this.emit(dialect, retrySql(dialect, names, input, flags.params ? 'params' : 'inline'))
  }
}
