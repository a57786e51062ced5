// A run's history (history.ts) once it is over: each worker's own lines, the harness's spawns,
// kills and exits, and the database's side: every event's insert (created_at) and publish mark
// (published_at), on the database's clock (the same machine's, for a local server).
import {sql} from '../../dialects/index.js'
import {closeOpenOperations, type HistoryEntry} from './history.js'
import type {Run} from './run.js'
import {tableRef} from './tables.js'

export async function runHistory(run: Run): Promise<HistoryEntry[]> {
  const since = (t: number) => t - run.started
  const entries: HistoryEntry[] = []
  for (const w of run.spawned) {
    const pid = w.pid
    entries.push({at: since(w.spawnedAt), process: w.name, pid, type: 'spawn', detail: w.armed ? `armed ${w.armed.step}=kill@${w.armed.hit}` : undefined})
    for (const {t, ...entry} of w.history) entries.push({...entry, at: since(t), process: w.name, pid})
    if (w.exit) {
      const killed = w.exit.signal === 'SIGKILL'
      const how = w.exit.failpoint ? `at ${w.exit.failpoint}` : w.exit.signal ?? `code ${w.exit.code}`
      entries.push({at: since(w.exit.at), process: w.name, pid, type: killed ? 'kill' : 'exit', detail: how})
    }
  }
  return [...closeOpenOperations(entries), ...(await databaseSide(run))].sort((a, b) => a.at - b.at)
}

async function databaseSide(run: Run): Promise<HistoryEntry[]> {
  const {db} = run
  const rows = await db.query<{id: unknown; created_at: unknown; published_at: unknown}>(
    sql`SELECT id, created_at, published_at FROM ${tableRef(db.dialect, run.tables.outbox.outbox)}`,
  )
  const at = (value: unknown) => {
    const time = value == null ? undefined : db.dialect.render.parseTime(value)
    return time ? time.getTime() - run.started : undefined
  }
  const entries: HistoryEntry[] = []
  for (const row of rows) {
    const ids = [String(row.id)]
    const committed = at(row.created_at)
    const published = at(row.published_at)
    if (committed !== undefined) entries.push({at: committed, process: 'database', type: 'created', ids})
    if (published !== undefined) entries.push({at: published, process: 'database', type: 'published', ids})
  }
  return entries
}
