// oclif's command_not_found hook: one line on stderr, as every other usage error, with the
// nearest command when there is one, and exit 2 (oclif's own message was a styled ' ›   Error:').
import type {Hook} from '@oclif/core'
import {EXIT} from '../core/errors.js'
import {nearest} from '../core/nearest.js'

const hook: Hook<'command_not_found'> = async function (options) {
  const typed = options.id.replaceAll(':', ' ')
  const commands = options.config.commandIDs.map((id) => id.replaceAll(':', ' '))
  const near = nearest(typed, commands)
  const hint = near ? `Did you mean: outbox ${near}?` : 'See: outbox --help'
  process.stderr.write(`outbox: ${JSON.stringify(typed)} is not an outbox command. ${hint}\n`)
  process.exit(EXIT.usage)
}

export default hook
