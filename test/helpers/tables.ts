// The set-up most integration files share: a Db on one target with the file's own event tables,
// made by init's own code, dropped again at the end. The names are unique to the file and the
// run, because files run in parallel on the same servers.
//
//   beforeAll(async () => {
//     ;({db, names} = await openTables(target.url, 'st', {inbox: false, archive: true}))
//   })
//   afterAll(() => closeTables(db, names))
import type {TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {applyInit, type InitOptions} from '../../src/schema/init.js'
import {dropTables, uniqueTables} from './targets.js'

export interface TestTables {
  db: Db
  names: TableNames
}

/**
 * Opens `url` and creates the outbox table, and the inbox and archive tables when `tables` asks.
 * `prefix` names fresh unique tables (keep it short: index names derive from it); a file that
 * needs its names before the hooks run passes the names it made with uniqueTables instead.
 */
export async function openTables(url: string, prefix: string | TableNames, tables: InitOptions): Promise<TestTables> {
  const db = await openDb(url)
  const names = typeof prefix === 'string' ? uniqueTables(prefix) : prefix
  try {
    await applyInit(db, names, tables)
  } catch (error) {
    await closeTables(db, names) // the caller never gets the Db to close
    throw error
  }
  return {db, names}
}

/** Drops the tables and closes the Db; passes over what openTables never got to open. */
export async function closeTables(db: Db | undefined, names: TableNames | undefined): Promise<void> {
  if (!db) return
  if (names) await dropTables(db, names)
  await db.close()
}
