// cli-table3 tables, loaded lazily; plain borders when colour is off so CI logs stay readable.
import {colorEnabled} from './color.js'

export async function renderTable(head: string[], rows: (string | number)[][], {compact = false} = {}): Promise<string> {
  const Table = (await import('cli-table3')).default
  // cli-table3 heads are red by default, which reads as an error: cyan, as status's in-flight figures
  const table = new Table({head, style: colorEnabled() ? {head: ['cyan'], compact} : {head: [], border: [], compact}})
  for (const row of rows) table.push(row.map(String))
  return table.toString()
}
