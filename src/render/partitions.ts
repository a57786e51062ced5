// The readable form of `outbox partitions` and `partitions --ensure`.
import type {EnsureResult} from '../ops/partitions-ensure.js'
import type {PartitionsReport} from '../ops/partitions.js'
import {palette} from './color.js'
import {renderTable} from './table.js'

const HEAD = ['partition', 'from', 'to', 'rows', 'size', 'oldest unpublished']

export async function renderPartitions(report: PartitionsReport): Promise<string> {
  const c = await palette()
  const rows = report.partitions.map((p) => [
    p.name,
    p.from ?? '-',
    p.catchAll ? 'catch-all' : (p.to ?? '-'),
    p.catchAll && p.rows > 0 ? c.yellow(String(p.rows)) : p.rows,
    bytes(p.sizeBytes),
    p.oldestUnpublished ?? '-',
  ])
  return `${report.table}: partitioned by ${report.interval}, last range ends ${report.lastEndsAt}\n${await renderTable(HEAD, rows)}\n`
}

export function renderEnsure(result: EnsureResult): string {
  const verb = result.dryRun ? 'would add' : 'added'
  const lines = result.added.map((p) => `${verb} ${p.name} [${p.from}, ${p.to})`)
  if (result.movedRows > 0) lines.push(`${result.dryRun ? 'would move' : 'moved'} ${result.movedRows} row(s) out of the catch-all partition`)
  const end = result.added.at(-1)?.to
  lines.push(end ? `${verb} ${result.added.length} partition(s); the last range ${result.dryRun ? 'would end' : 'ends'} ${end}` : `up to date: the last range ends ${result.lastEndsAt}`)
  return lines.join('\n') + '\n'
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  const units = ['kB', 'MB', 'GB', 'TB']
  let value = n / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) (value /= 1024), unit++
  return `${value.toFixed(1)} ${units[unit]}`
}
