// The dialect matrix: real PostgreSQL, MariaDB (for the mysql dialect) and SQLite.
// A server that is down is skipped locally with a clear message, and fails the run in CI.
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {randomBytes} from 'node:crypto'
import type {DialectName, TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'

export const PG_URL = process.env.OUTBOX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.OUTBOX_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

export interface Target {
  dialect: DialectName
  /** a URL for this file: a server URL, or a fresh SQLite file */
  url: string
  available: boolean
  reason?: string
}

const tempDirs: string[] = []
process.on('exit', () => tempDirs.forEach((d) => rmSync(d, {recursive: true, force: true})))

export function sqliteUrl(): string {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-test-'))
  tempDirs.push(dir)
  return `sqlite:${join(dir, 'test.db')}`
}

async function probe(url: string): Promise<string | undefined> {
  try {
    const db = await openDb(url, {connectTimeoutMs: 3000, poolSize: 1})
    await db.close()
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

const warned = new Set<string>()

async function server(dialect: DialectName, url: string): Promise<Target> {
  const reason = await probe(url)
  if (reason) {
    if (process.env.CI === 'true') throw new Error(`${dialect} server required in CI but unreachable at ${url}: ${reason}`)
    if (!warned.has(dialect)) {
      warned.add(dialect)
      console.warn(`[outbox tests] SKIPPING ${dialect} suites: ${reason}. Start the server or set OUTBOX_TEST_${dialect === 'postgres' ? 'PG' : 'MYSQL'}_URL.`)
    }
  }
  return {dialect, url, available: !reason, reason}
}

/** All three dialects; use with describe.skipIf(!t.available). */
export async function targets(only?: DialectName[]): Promise<Target[]> {
  const all: Target[] = []
  if (!only || only.includes('postgres')) all.push(await server('postgres', PG_URL))
  if (!only || only.includes('mysql')) all.push(await server('mysql', MYSQL_URL))
  if (!only || only.includes('sqlite')) all.push({dialect: 'sqlite', url: sqliteUrl(), available: true})
  return all
}

/** Table names unique to one test file (and run), so files can run in parallel on one server. */
export function uniqueTables(prefix: string): TableNames {
  const tag = `${prefix}_${randomBytes(3).toString('hex')}`
  return {outbox: `t_${tag}`, inbox: `t_${tag}_in`, archive: `t_${tag}_ar`}
}

export async function dropTables(db: Db, names: TableNames): Promise<void> {
  for (const which of ['outbox', 'inbox', 'archive'] as const) {
    const {raw, sql} = await import('../../dialects/index.js')
    await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table(names, which))}`).catch(() => {})
  }
}
