// archive on a partitioned outbox, in text: how partitions leave the outbox, each one taken (or
// to take) out whole, each one held with why, and what is left to the batches.
import type {ArchiveOutput} from '../ops/archive.js'
import type {PartitionSpan} from '../ops/archive-partitions.js'
import {palette} from './color.js'
import {renderTable} from './table.js'

const range = (p: PartitionSpan) => `${p.from ?? '(start)'} .. ${p.to}`

export async function partitionLines(r: ArchiveOutput): Promise<string[]> {
  const p = r.partitions
  if (!p) return []
  const c = await palette()
  const verb = r.mode === 'delete' ? 'drop' : 'move + drop'
  const rows: (string | number)[][] = []
  let taken: number
  if (r.dryRun) {
    const p = r.partitions!
    taken = p.whole.length + p.unfinished.length
    for (const u of p.unfinished) rows.push([`finish (${u.mode})`, u.table, `left ${u.state} by an earlier run`, u.rows])
    for (const w of p.whole) rows.push([verb, w.name, range(w), w.rows])
  } else {
    const p = r.partitions!
    taken = p.retired.length + p.finished.length
    for (const u of p.finished) rows.push([`finished (${u.mode})`, u.table, `left ${u.state} by an earlier run`, u.rows])
    for (const w of p.retired) rows.push([r.mode === 'delete' ? 'dropped' : 'moved + dropped', w.name, range(w), w.rows])
    for (const name of p.restored) rows.push(['put back', name, 'rows changed since the check: left to the batches', ''])
    for (const name of p.refilled) rows.push(['kept', name, 'rows written into its range since it was emptied: the next run judges it', ''])
  }
  for (const h of p.held) rows.push(['held', h.name, `${range(h)}: ${h.reason}`, h.rows])
  const head = `partitions: ${taken} ${r.dryRun ? 'to take' : 'taken'} out whole, ${p.held.length} held; ${p.batchedRows} row(s) ${r.dryRun ? 'left to' : 'moved in'} the batches. How: ${p.detachWhy}`
  const lines = [c.cyan(head)]
  if (rows.length) lines.push(await renderTable(['partition', 'table', 'range', 'rows'], rows.map(([a, b, d, e]) => [a, b, d, e])))
  for (const h of p.held) lines.push(c.yellow(`held: ${h.name} is never dropped while it ${h.reason}`))
  return lines
}
