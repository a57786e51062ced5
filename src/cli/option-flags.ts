// Library errors name options as the library spells them (minPublishedAgeMs, inboxTable); the
// CLI shows them as the flags a user types (--min-published-age, --inbox-table).
import type {OptionSpelling} from '../core/errors.js'

/** Options whose flag is not their kebab-case name less a trailing "Ms" (durations are flags with units). */
const FLAG_OF_OPTION: Record<string, string> = {
  failedOnly: 'failed',
  types: 'type',
  aggregateId: 'aggregate',
  scenarioPath: 'scenario',
  port: 'metrics-port', // serveMetrics's port: the relay's only port
}

/** `minPublishedAgeMs` -> `--min-published-age`; a name that is a flag already stays as it is. */
export const asFlag: OptionSpelling = (option) =>
  `--${FLAG_OF_OPTION[option] ?? option.replace(/(?<=[a-z0-9])Ms$/, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`
