import {Args} from '@oclif/core'
import {OpsCommand, opsFlags} from '../../src/cli/ops-command.js'
import {UsageError} from '../../src/core/errors.js'
import type {ShownEvent} from '../../src/ops/failed.js'
import {isUuid} from '../../src/core/uuid.js'

export default class FailedShow extends OpsCommand {
  static override summary = 'Print one event in full: state, attempts, last error, headers and payload'
  static override description = `Looks in the outbox table, then in the archive table. Works for any event, failed or not; its state is shown (pending, in-flight, expired-lease, retrying, failed, published, archived).

Exit codes: 0 shown, 2 not an id, no such event, an unreachable database or a missing table.`
  static override examples = [
    '<%= config.bin %> failed show 0190f5e4-6c1a-7b9e-8d2f-3a4b5c6d7e8f',
    '<%= config.bin %> failed show 0190f5e4-6c1a-7b9e-8d2f-3a4b5c6d7e8f --json | jq .payload',
  ]
  static override args = {id: Args.string({description: 'event id (UUID)', required: true})}
  static override flags = {...opsFlags}

  async run(): Promise<ShownEvent> {
    const {args, flags} = await this.parse(FailedShow)
    const id = args.id.trim()
    if (!isUuid(id)) throw new UsageError(`${JSON.stringify(args.id)} is not an event id`, 'Give the UUID shown by outbox failed')
    const settings = await this.connection(flags)
    const {showEvent} = await import('../../src/ops/failed.js')
    const event = await this.withDb(settings, (db) => showEvent(db, settings.tables, id), {readOnly: true})
    if (!event) {
      throw new UsageError(`no event ${id.toLowerCase()} in ${settings.tables.outbox} or ${settings.tables.archive}`, 'List failed events with: outbox failed')
    }
    if (!this.jsonEnabled()) {
      const {renderEvent} = await import('../../src/render/events.js')
      process.stdout.write(await renderEvent(event))
    }
    return event
  }
}
