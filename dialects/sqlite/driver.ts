// sqlite: connecting through better-sqlite3 (connect.ts, imported on the first open), a file
// that must be there already, and an app's better-sqlite3 Database given to writeEventSync or
// Consumer (it is synchronous: writeEvent refuses it).
import type BetterSqlite3 from 'better-sqlite3'
import {lazyOpen, method, type DriverPart} from '../driver.js'
import {runSync} from './statements.js'

export const driver: DriverPart = {
  open: lazyOpen(() => import('./connect.js')),
  requireExisting: async (url) => (await import('../../src/db/url.js')).requireSqliteFile(url),
  executor: (executor) => {
    if (!method(executor, 'prepare') || !method(executor, 'pragma')) return undefined
    const database = executor as BetterSqlite3.Database
    const run = (text: string, params: unknown[]) => runSync(database, text, params)
    return {kind: 'session', sure: true, begin: 'BEGIN IMMEDIATE', session: {native: database, run: async (text, params) => run(text, params), runSync: run, inTransaction: () => database.inTransaction}}
  },
  kyselyAdapter: /sqlite/i,
}
