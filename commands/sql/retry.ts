import {Flags} from '@oclif/core'
import {checkId, leaseOwner, nonNegativeInt, SqlCommand, sqlFlags} from '../../src/cli/sql-command.js'
import {retrySql} from '../../src/relay/sql-text.js'
import {parseDuration} from '../../src/core/time.js'

export default class SqlRetry extends SqlCommand {
  static override summary = "Print the relay's retry statement: release with backoff, or fail after max attempts"
  static override description = `Releases the lease with lease_until set to the next attempt time (the claim honours it), records the error, and sets failed_at once attempts reach --max-attempts. Only the lease owner's update applies, so a relay whose lease lapsed cannot fail an event another relay holds.`
  static override examples = [
    '<%= config.bin %> sql retry --dialect postgres --id 0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f --owner relay-1 --delay 30s --error "503 from broker"',
    '<%= config.bin %> sql retry --dialect sqlite --params',
  ]
  static override flags = {
    ...sqlFlags,
    id: Flags.string({description: 'event id', default: '00000000-0000-0000-0000-000000000001'}),
    owner: Flags.string({description: 'the lease_owner the claim wrote (required unless --params): only its lease is changed'}),
    delay: Flags.string({description: 'backoff until the next attempt', default: '1s'}),
    error: Flags.string({description: 'error text to record', default: 'publish failed'}),
    'max-attempts': Flags.string({description: 'attempts after which the event is failed (0 = fail now)', default: '10'}),
  }

  async run() {
    const {flags} = await this.parse(SqlRetry)
    const {dialect, names} = this.target(flags)
    const input = {
      id: checkId(flags.id, 'id'),
      delayMs: parseDuration(flags.delay, 'delay', {allowZero: true}),
      error: flags.error,
      maxAttempts: nonNegativeInt(flags['max-attempts'], 'max-attempts'),
      owner: leaseOwner(flags.owner, flags.params),
    }
    return this.emit(dialect, retrySql(dialect, names, input, flags.params ? 'params' : 'inline'))
  }
}
