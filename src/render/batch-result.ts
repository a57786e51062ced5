// Readable summaries of replay and archive (and their dry runs): totals, per type, a sample.
import type {ArchiveOutput} from '../ops/archive.js'
import type {ReplayOutput} from '../ops/replay.js'
import type {SampleEvent} from '../ops/events.js'
import {palette} from './color.js'
import {partitionLines} from './archive-partitions.js'
import {renderTable} from './table.js'
import {cell} from './events.js'

async function perType(byType: Record<string, number>): Promise<string[]> {
  const entries = Object.entries(byType).sort(([a], [b]) => a.localeCompare(b))
  return entries.length ? [await renderTable(['type', 'rows'], entries.map(([type, n]) => [cell(type, 40), n]))] : []
}

async function sample(rows: SampleEvent[]): Promise<string[]> {
  return rows.length ? ['sample:', await renderTable(['id', 'type', 'created'], rows.map((r) => [cell(r.id, 36), cell(r.eventType, 40), r.createdAt]))] : []
}

/** The ids listed (at most 100), with … when there were more. */
function idList(ids: string[], total: number): string {
  return ids.map((id) => cell(id, 36)).join(', ') + (ids.length < total ? ', …' : '')
}

function range(since: string | null, until: string | null): string {
  if (!since && !until) return ''
  return ` created ${since ? `from ${since} (inclusive)` : ''}${since && until ? ' ' : ''}${until ? `before ${until} (exclusive)` : ''}`
}

export async function renderReplay(r: ReplayOutput): Promise<string> {
  const c = await palette()
  const from = r.source === 'archive' ? ' from the archive' : ''
  const head = r.dryRun
    ? c.cyan(`dry run: would replay ${r.wouldReplay} of ${r.matched} matching event(s)${from}${range(r.since, r.until)}; nothing changed`)
    : c.green(`replayed ${r.replayed} event(s)${from}${range(r.since, r.until)} in ${r.batches} batch(es)`)
  const lines = [head, ...(await perType(r.byType))]
  if (r.skippedLeased) lines.push(c.yellow(`skipped ${r.skippedLeased} leased by a live relay (replay them once the lease ends): ${idList(r.skippedLeasedIds, r.skippedLeased)}`))
  if (!r.dryRun && r.interrupted) {
    const resume = r.doneThrough ? `; to continue, rerun with --since ${r.doneThrough} (rows at that instant are replayed again, same ids)` : ''
    lines.push(c.yellow(`interrupted: stopped after batch ${r.batches}, which committed; later rows were not touched${resume}`))
  }
  if (r.alreadyInOutbox) lines.push(c.yellow(`skipped ${r.alreadyInOutbox} already in the outbox table (left in the archive): ${idList(r.alreadyInOutboxIds, r.alreadyInOutbox)}`))
  if (r.dryRun) lines.push(...(await sample(r.sample)))
  return lines.join('\n') + '\n'
}

export async function renderArchive(r: ArchiveOutput): Promise<string> {
  const c = await palette()
  const verb = r.mode === 'delete' ? 'delete' : 'move to the archive'
  const scope = `published event(s) created before ${r.before} (exclusive), published before ${r.publishedBefore}`
  const head = r.dryRun
    ? c.cyan(`dry run: would ${verb} ${r.wouldArchive} ${scope}; nothing changed`)
    : c.green(`${r.mode === 'delete' ? 'deleted' : 'archived'} ${r.archived} ${scope}, in ${r.batches} batch(es)${r.file ? `; written to ${r.file}` : ''}`)
  const lines = [head, ...(await perType(r.byType)), ...(await partitionLines(r))]
  if (!r.dryRun && r.interrupted) lines.push(c.yellow(`interrupted: stopped after batch ${r.batches}, which committed; later rows were not touched; rerun the same command to continue`))
  if (r.dryRun) lines.push(...(await sample(r.sample)))
  return lines.join('\n') + '\n'
}
