// Readable forms of events: the failed list (one line per event) and one event in full.
import type {ShownEvent} from '../ops/failed.js'
import type {FailedList} from '../ops/failed.js'
import {palette} from './color.js'
import {renderTable} from './table.js'

/** First line only, at most max characters: a stack trace must not blow up the table. */
export function truncate(text: string | null, max = 60): string {
  if (!text) return ''
  const first = text.split('\n')[0].trim()
  const more = first.length < text.trim().length
  if (first.length <= max) return more ? `${first} …` : first
  return `${first.slice(0, max - 1)}…`
}

function aggregate(e: {aggregateType: string | null; aggregateId: string}): string {
  return e.aggregateType ? `${e.aggregateType}:${e.aggregateId}` : e.aggregateId
}

export async function renderFailedList(list: FailedList): Promise<string> {
  const c = await palette()
  if (list.total === 0) return `${c.green('no failed events')}\n`
  const table = await renderTable(
    ['id', 'type', 'aggregate', 'attempts', 'created', 'failed at', 'last error'],
    list.events.map((e) => [e.id, e.eventType, truncate(aggregate(e), 30), e.attempts, e.createdAt, e.failedAt ?? '', truncate(e.lastError)]),
  )
  const shown = list.events.length < list.total ? `showing ${list.events.length} of ${list.total} failed events (raise --limit for more)` : `${list.total} failed event(s)`
  return `${table}\n${c.red(shown)}\nfull event: outbox failed show ID; make them deliverable again: outbox replay --failed\n`
}

export async function renderEvent(e: ShownEvent): Promise<string> {
  const c = await palette()
  const field = (name: string, value: unknown) => `${c.bold(name.padEnd(17))} ${value ?? '-'}`
  const lines = [
    field('id', e.id),
    field('state', e.state === 'failed' ? c.red(e.state) : e.state),
    field('table', e.table),
    field('event_type', e.eventType),
    field('aggregate', aggregate(e)),
    field('aggregate_version', e.aggregateVersion),
    field('created_at', e.createdAt),
    field('published_at', e.publishedAt),
    field('failed_at', e.failedAt),
    field('attempts', e.attempts),
    field('lease', e.leaseOwner ? `${e.leaseOwner} until ${e.leaseUntil}` : e.leaseUntil ? `none (next attempt ${e.leaseUntil})` : 'none'),
  ]
  if (e.archivedAt !== undefined) lines.push(field('archived_at', e.archivedAt))
  lines.push(c.bold('last_error'), e.lastError ?? '-', c.bold('headers'), JSON.stringify(e.headers, null, 2), c.bold('payload'), JSON.stringify(e.payload, null, 2))
  return lines.join('\n') + '\n'
}
