// oclif's command_not_found hook: one line on stderr, as every other usage error, with the
// nearest command when there is one, and exit 2 (oclif's own message was a styled ' ›   Error:').
import type {Hook} from '@oclif/core'
import {EXIT} from '../core/errors.js'

const hook: Hook<'command_not_found'> = async function (options) {
  const typed = options.id.replaceAll(':', ' ')
  const commands = options.config.commandIDs.map((id) => id.replaceAll(':', ' '))
  const nearest = commands.map((c) => [c, distance(typed, c)] as const).sort((a, b) => a[1] - b[1])[0]
  const hint = nearest && nearest[1] <= Math.max(2, Math.floor(typed.length / 3)) ? `Did you mean: outbox ${nearest[0]}?` : 'See: outbox --help'
  process.stderr.write(`outbox: ${JSON.stringify(typed)} is not an outbox command. ${hint}\n`)
  process.exit(EXIT.usage)
}

/** Levenshtein distance: the edits between two short strings. */
function distance(a: string, b: string): number {
  let row = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    row = next
  }
  return row[b.length]
}

export default hook
