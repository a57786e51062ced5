// The machine and server facts BENCHMARKS.md states: cores, memory, and each database's
// version and the settings that decide commit cost. A server that is down is reported as such.
import {cpus, totalmem} from 'node:os'
import Database from 'better-sqlite3'
import mysql from 'mysql2/promise'
import pg from 'pg'
import {MYSQL_URL, PG_URL} from './servers.js'

const PG_SETTINGS = ['server_version', 'synchronous_commit', 'fsync', 'wal_level', 'shared_buffers', 'max_connections', 'shared_preload_libraries']
const MYSQL_SETTINGS = ['version', 'innodb_flush_log_at_trx_commit', 'sync_binlog', 'log_bin', 'innodb_buffer_pool_size', 'transaction_isolation', 'tx_isolation']

async function postgres() {
  const client = new pg.Client({connectionString: PG_URL.replace(/\/[^/]*$/, '/postgres'), connectionTimeoutMillis: 3000})
  try {
    await client.connect()
    const {rows} = await client.query('SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)', [PG_SETTINGS])
    const byName = Object.fromEntries(rows.map((r) => [r.name, r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024} MB` : r.setting]))
    return Object.fromEntries(PG_SETTINGS.map((n) => [n, byName[n] ?? '']))
  } catch (error) {
    return {unavailable: error.message}
  } finally {
    await client.end().catch(() => {})
  }
}

async function mariadb() {
  const u = new URL(MYSQL_URL)
  let connection
  try {
    connection = await mysql.createConnection({host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), connectTimeout: 3000})
    const [rows] = await connection.query('SHOW VARIABLES WHERE Variable_name IN (?)', [MYSQL_SETTINGS])
    const byName = Object.fromEntries(rows.map((r) => [r.Variable_name, r.Value]))
    if (byName.innodb_buffer_pool_size) byName.innodb_buffer_pool_size = `${Number(byName.innodb_buffer_pool_size) / 2 ** 20} MB`
    return byName
  } catch (error) {
    return {unavailable: error.message}
  } finally {
    await connection?.end().catch(() => {})
  }
}

function sqlite() {
  const db = new Database(':memory:')
  const version = db.prepare('SELECT sqlite_version() AS v').get().v
  db.close()
  // The settings every connection of ours uses (dialects/sqlite/driver.ts), on a file in the temp dir.
  return {version, journal_mode: 'wal', synchronous: 'NORMAL'}
}

export async function machine() {
  return {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    postgres: await postgres(),
    mariadb: await mariadb(),
    sqlite: sqlite(),
  }
}
