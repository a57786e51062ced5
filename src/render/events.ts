// Readable forms of events: the failed list (one line per event) and one event in full.
import type {ShownEvent} from '../ops/failed.js'
import type {FailedList} from '../ops/failed.js'
import {palette} from './color.js'
import {renderTable} from './table.js'
import {clip, printable} from '../core/text.js'

/**
 * One table cell from outside text: its first non-blank line, control characters shown, at
 * most max characters, ending in … when anything was cut (a longer line, or more lines).
 */
export function cell(text: string | null | undefined, max = 60): string {
  if (!text) return ''
  const all = text.trim()
  const first = all.split('\n').find((line) => line.trim() !== '')?.trim() ?? ''
  const line = clip(printable(first), max)
  return first !== all && !line.endsWith('…') ? `${line} …` : line
}

function aggregate(e: {aggregateType: string | null; aggregateId: string}): string {
  return e.aggregateType ? `${e.aggregateType}:${e.aggregateId}` : e.aggregateId
}

/** `filtered`: --type or --since narrowed the list, so none listed is none matching, not none at all. */
export async function renderFailedList(list: FailedList, filtered = false): Promise<string> {
  const c = await palette()
  if (list.total === 0) return `${c.green(filtered ? 'no failed events match --type/--since' : 'no failed events')}\n`
  const table = await renderTable(
    ['id', 'type', 'aggregate', 'attempts', 'created', 'failed at', 'last error'],
    list.events.map((e) => [cell(e.id, 36), cell(e.eventType, 40), cell(aggregate(e), 30), e.attempts, e.createdAt, e.failedAt ?? '', cell(e.lastError)]),
  )
  const shown = list.events.length < list.total ? `showing ${list.events.length} of ${list.total} failed events (raise --limit for more)` : `${list.total} failed event(s)`
  return `${table}\n${c.red(shown)}\nfull event: outbox failed show ID; make them deliverable again: outbox replay --failed\n`
}

/** lease_until is the lease's end while a relay holds it, the next attempt's time after a failed one: never for published or failed events. */
function leaseLine(e: ShownEvent): string {
  if (e.leaseOwner) return `${e.leaseOwner} until ${e.leaseUntil}${e.state === 'expired-lease' ? ' (expired: another relay may take it over)' : ''}`
  if (e.leaseUntil && e.state === 'retrying') return `none (next attempt not before ${e.leaseUntil})`
  return 'none'
}

export async function renderEvent(e: ShownEvent): Promise<string> {
  const c = await palette()
  // every value here may come from outside (a receiver's error reply): shown, never obeyed
  const field = (name: string, value: unknown) => `${c.bold(name.padEnd(17))} ${value == null ? '-' : printable(String(value))}`
  const lines = [
    field('id', e.id),
    `${c.bold('state'.padEnd(17))} ${e.state === 'failed' ? c.red(e.state) : e.state}`,
    field('table', e.table),
    field('event_type', e.eventType),
    field('aggregate', aggregate(e)),
    field('aggregate_version', e.aggregateVersion),
    field('created_at', e.createdAt),
    field('published_at', e.publishedAt),
    field('failed_at', e.failedAt),
    field('attempts', e.attempts),
    field('lease', leaseLine(e)),
  ]
  if (e.archivedAt !== undefined) lines.push(field('archived_at', e.archivedAt))
  // JSON.stringify escapes C0 controls but not DEL, C1 or the bidi overrides
  const json = (value: unknown) => printable(JSON.stringify(value, null, 2), {lines: true})
  lines.push(c.bold('last_error'), e.lastError == null ? '-' : printable(e.lastError, {lines: true}), c.bold('headers'), json(e.headers), c.bold('payload'), json(e.payload))
  return lines.join('\n') + '\n'
}
