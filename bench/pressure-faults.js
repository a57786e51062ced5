// The pressure suite's server-side faults, on a private server only (never the shared ones on
// 5432 / 3306, where other work runs): restart the server mid-phase (pg_ctlcluster restart;
// mariadbd stopped by SIGTERM and started again with its own command line), and take all but a
// few connection slots with idle connections.
import {execFile, execFileSync, spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {promisify} from 'node:util'
import {session} from './pressure-load.js'

const run = promisify(execFile)
const SHARED_PORTS = {postgres: '5432', mysql: '3306'}
const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)))
// no server answering this long after a restart is a failed run, not a slow one
const UP_TIMEOUT_MS = 60_000
// a few thousand idle sessions at most: a server allowing more is not "nearly used up" by us
const MAX_HOGS = 2000

const portOf = (dialect, url) => new URL(url).port || SHARED_PORTS[dialect]

/** Throws unless the URL names a server of our own (a port other than the shared one). */
export function requirePrivate(dialect, url, fault) {
  if (portOf(dialect, url) === SHARED_PORTS[dialect]) {
    throw new Error(`pressure: --faults=${fault} needs a private ${dialect} server (--${dialect === 'postgres' ? 'pg' : 'mysql'}-url= on a port other than ${SHARED_PORTS[dialect]}): the shared one serves other work`)
  }
}

/** Resolves once a fresh session can run a query (the server accepts connections again). */
async function waitUp(dialect, url) {
  const end = performance.now() + UP_TIMEOUT_MS
  for (;;) {
    try {
      const s = await session(dialect, url)
      await s.run('SELECT 1')
      await s.end()
      return
    } catch (error) {
      if (performance.now() > end) throw new Error(`pressure: the ${dialect} server on port ${portOf(dialect, url)} is not back after ${UP_TIMEOUT_MS / 1000} s: ${error.message}`)
      await sleep(100)
    }
  }
}

/** PostgreSQL: the Debian cluster listening on the URL's port, restarted with pg_ctlcluster (stopped for downMs, if any). */
async function restartPostgres(url, downMs) {
  const port = portOf('postgres', url)
  const line = execFileSync('pg_lsclusters', ['-h'], {encoding: 'utf8'})
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[2] === port)
  if (!line) throw new Error(`pressure: no pg_lsclusters cluster on port ${port}`)
  if (!downMs) return void (await run('pg_ctlcluster', [line[0], line[1], 'restart']))
  await run('pg_ctlcluster', [line[0], line[1], 'stop'])
  await sleep(downMs)
  await run('pg_ctlcluster', [line[0], line[1], 'start'])
}

/** MariaDB: the mariadbd listening on the URL's port, stopped (SIGTERM) and started with the same command line. */
async function restartMariadb(url, downMs) {
  const port = portOf('mysql', url)
  const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], {encoding: 'utf8'})
  const pid = Number(/pid=(\d+)/.exec(out)?.[1])
  if (!pid) throw new Error(`pressure: no process listens on port ${port}`)
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)
  process.kill(pid, 'SIGTERM')
  while (isAlive(pid)) await sleep(50)
  await sleep(downMs)
  spawn(argv[0], argv.slice(1), {detached: true, stdio: 'ignore'}).unref()
}

function isAlive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Restarts the URL's (private) server, kept stopped for downSeconds in between; returns when it
 * accepts connections again, with the seconds it took.
 */
export async function restartServer(dialect, url, downSeconds = 0) {
  requirePrivate(dialect, url, 'restart')
  const started = performance.now()
  await (dialect === 'postgres' ? restartPostgres(url, downSeconds * 1000) : restartMariadb(url, downSeconds * 1000))
  await waitUp(dialect, url)
  return (performance.now() - started) / 1000
}

/**
 * Opens idle sessions until the server refuses one (every slot taken), then closes `leave` of
 * them: the server is left with that many free slots. release() closes the rest.
 */
export async function hogSlots(dialect, url, leave) {
  requirePrivate(dialect, url, 'slots')
  const held = []
  let refusal = ''
  while (held.length < MAX_HOGS) {
    try {
      held.push(await session(dialect, url))
    } catch (error) {
      refusal = error.message
      break
    }
  }
  for (const s of held.splice(held.length - Math.min(leave, held.length))) await s.end()
  const release = async () => void (await Promise.all(held.splice(0).map((s) => s.end())))
  return {count: held.length, refusal, release, end: release}
}
