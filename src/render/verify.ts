// verify's pass/fail table and its progress line (TTY only, on stderr).
import type {CheckResult, Progress} from '../verify/types.js'
import {colorEnabled, palette} from './color.js'

export async function renderVerifyTable(checks: CheckResult[], width = process.stdout.columns || 120): Promise<string> {
  const Table = (await import('cli-table3')).default
  const c = await palette()
  const label = {pass: c.green('PASS'), fail: c.red('FAIL'), skip: c.dim('n/a')}
  const first = Math.max(...checks.map((r) => r.title.length)) + 2
  const detail = Math.max(40, width - first - 8 - 8)
  const table = new Table({
    head: ['check', 'result', 'detail'],
    colWidths: [first, 8, detail],
    wordWrap: true,
    style: colorEnabled() ? {head: ['cyan']} : {head: [], border: []}, // not cli-table3's red: a passing run is no error
  })
  for (const r of checks) table.push([r.title, label[r.status], r.detail])
  return table.toString()
}

/** Rewrites one stderr line while checks run; a no-op when stderr is not a terminal. */
export function progressLine(stream: NodeJS.WriteStream = process.stderr) {
  if (!stream.isTTY) return {update: (_: Progress) => {}, clear: () => {}}
  let last = 0
  return {
    update: (p: Progress) => {
      // notes arrive per claimed batch; a few redraws a second are enough
      if (p.note && performance.now() - last < 100) return
      last = performance.now()
      stream.write(`\r\u001b[K[${p.index + 1}/${p.total}] ${p.title}${p.note ? `  ${p.note}` : ''}`)
    },
    clear: () => stream.write('\r\u001b[K'),
  }
}
