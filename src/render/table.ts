// cli-table3 tables, loaded lazily; plain borders when colour is off so CI logs stay readable.
import {colorEnabled} from './color.js'

export async function renderTable(head: string[], rows: (string | number)[][]): Promise<string> {
  const Table = (await import('cli-table3')).default
  const table = new Table({head, style: colorEnabled() ? {} : {head: [], border: []}})
  for (const row of rows) table.push(row.map(String))
  return table.toString()
}
