// Where the benchmark suites connect; `lib` is the compiled library they measure (lib-under-test.js).
// Defaults are this machine's servers; override with OUTBOX_BENCH_PG_URL / OUTBOX_BENCH_MYSQL_URL.
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import pg from 'pg'
import {lib} from './lib-under-test.js'

// Its own database, so peers' schemas (pg-boss, graphile-worker) never land in the tests' one.
export const PG_URL = process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/outbox_bench'
export const MYSQL_URL = process.env.OUTBOX_BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

export {lib} from './lib-under-test.js'

const dirs = []
process.on('exit', () => dirs.forEach((d) => rmSync(d, {recursive: true, force: true})))

/** A fresh SQLite file URL, removed when the process exits. */
export function sqliteUrl() {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-bench-'))
  dirs.push(dir)
  return `sqlite:${join(dir, 'bench.db')}`
}

/** Creates the benchmark database on first use (CREATE DATABASE has no IF NOT EXISTS). */
export async function ensurePgDatabase(url = PG_URL) {
  const target = new URL(url)
  const name = decodeURIComponent(target.pathname.slice(1))
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const client = new pg.Client({connectionString: admin.href})
  await client.connect()
  try {
    const {rowCount} = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (!rowCount) await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`)
  } finally {
    await client.end()
  }
}

/** The URL's parts as the pg driver's ClientConfig (for libraries that take no URL). */
export function pgConfig(url = PG_URL) {
  const u = new URL(url)
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: decodeURIComponent(u.pathname.slice(1)),
  }
}

/** Undefined when the server answers, else the reason (suites skip that database, noted). */
export async function unreachable(url) {
  try {
    const db = await lib.openDb(url, {poolSize: 1, connectTimeoutMs: 3000})
    await db.close()
    return undefined
  } catch (error) {
    return error.message
  }
}
