// A Ctrl-C or a SIGTERM at any moment of `outbox chaos` leaves nothing behind: no chaos_ table
// (in a database of this file's own, so every chaos_ table there is the run's), no scratch
// queue, stream or key on a real broker (by the prefixes the run used), no worker process,
// and the exit code is 130 / 143. The real CLI is spawned and signalled at a moment read from
// the outside: its seed line was printed (the first run about to make its tables), its first
// table appeared (setup), its workers are up, a fault-proxy scenario is
// under way, the last run is over and the report is being written (into a FIFO nobody reads
// yet, so the write waits for the test). SIGINT goes to the process group, as a terminal's
// Ctrl-C does (the workers get it too); SIGTERM to the CLI alone, as a CI runner's cancel does.
import {spawn} from 'node:child_process'
import {execFileSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {openDb} from '../../src/db/index.js'
import {BIN} from '../helpers/cli.js'
import {broker} from '../helpers/brokers.js'
import {brokerLeftovers, chaosTables, ownDatabase, prefixOf, processesWith} from '../helpers/chaos-leftovers.js'
import {until} from '../helpers/publishers.js'
import {sqliteUrl, targets} from '../helpers/targets.js'

type Signal = 'SIGINT' | 'SIGTERM'
const CODE: Record<Signal, number> = {SIGINT: 130, SIGTERM: 143}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const ONE_STEP = ['--steps', 'relay.after-send', '--scenarios', 'none']

interface Watched {
  stderr: () => string
  /** every run prefix seen so far (tables in the database, workers' configs) */
  prefixes: Set<string>
  workers: () => number
}

interface Moment {
  name: string
  args: (dir: string) => string[]
  /** resolves when the signal is to be sent */
  when: (w: Watched) => Promise<void>
  /** the signal comes after the last run: the report is written whole */
  afterRuns?: boolean
  /** the signal may come before the first table was made */
  early?: boolean
}

const starting: Moment = {name: 'at the start (its seed line just printed)', args: () => ONE_STEP, when: (w) => until(() => /seed \d+/.test(w.stderr()), 60_000, 'the seed line'), early: true}
const setup: Moment = {name: 'in the setup (its first scratch table just appeared)', args: () => ONE_STEP, when: (w) => until(() => w.prefixes.size > 0, 60_000, 'a scratch table')}
const workersUp: Moment = {name: 'mid-run, workers alive', args: () => ONE_STEP, when: (w) => until(() => w.workers() >= 2, 60_000, 'live workers')}
/** afterMs: past the workers' start (hang on a real broker: into its black hole, which opens at the first publish) */
const faultProxy = (scenario: string, afterMs = 400): Moment => ({
  name: `during the fault-proxy scenario ${scenario}`,
  args: () => ['--steps', 'none', '--scenarios', scenario],
  when: async (w) => {
    await until(() => w.workers() >= 2, 60_000, 'live workers')
    await sleep(afterMs)
  },
})
const writingReport: Moment = {
  name: 'while writing the report',
  args: (dir) => [...ONE_STEP, '--report', join(dir, 'report.fifo')],
  when: (w) => until(() => /\[1\/1\] relay\.after-send: \w+/.test(w.stderr()), 90_000, 'the last run over'),
  afterRuns: true,
}

/** the run prefixes in the configs of the live workers whose environment mentions `marker` */
function workerPrefixes(marker: string): string[] {
  return processesWith(marker).flatMap((pid) => {
    try {
      return [/"prefix":"(chaos_[0-9a-f]{6})"/.exec(readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1] ?? []].flat()
    } catch {
      return []
    }
  })
}

async function interrupt(opts: {url: string; marker: string; moment: Moment; signal: Signal; brokerArgs?: string[]}) {
  const dir = execFileSync('mktemp', ['-d'], {encoding: 'utf8'}).trim()
  if (opts.moment.afterRuns) execFileSync('mkfifo', [join(dir, 'report.fifo')])
  const args = ['chaos', '--url', opts.url, '--seed', '5', ...opts.moment.args(dir), ...(opts.brokerArgs ?? [])]
  // its own process group: a SIGINT to the group reaches the CLI and its workers, as Ctrl-C does
  const child = spawn(process.execPath, [BIN, ...args], {detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: {...process.env, NO_COLOR: '1'}})
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) => child.on('close', (code, signal) => resolve({code, signal})))
  const db = await openDb(opts.url, {poolSize: 1})
  const prefixes = new Set<string>()
  let polling = true
  const poll = (async () => {
    while (polling) {
      for (const t of await chaosTables(db).catch(() => [])) prefixes.add(prefixOf(t) ?? t)
      for (const p of workerPrefixes(opts.marker)) prefixes.add(p)
      await sleep(15)
    }
  })()
  try {
    await Promise.race([
      opts.moment.when({stderr: () => stderr, prefixes, workers: () => processesWith(opts.marker).length}),
      exited.then(() => {
        throw new Error(`chaos exited before the moment: ${stderr}`)
      }),
    ])
    if (opts.signal === 'SIGINT') process.kill(-child.pid!, 'SIGINT')
    else child.kill('SIGTERM')
    // the report's write waits for a reader
    const report = opts.moment.afterRuns ? await Promise.race([readFile(join(dir, 'report.fifo'), 'utf8'), exited.then(() => sleep(2000)).then(() => '(never written)')]) : undefined
    const exit = await exited
    polling = false
    await poll
    await until(() => processesWith(opts.marker).length === 0, 5000, 'no worker left').catch(() => {})
    return {exit, stdout, stderr, report, prefixes, tables: await chaosTables(db), workers: processesWith(opts.marker)}
  } finally {
    polling = false
    await db.close()
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {}
    execFileSync('rm', ['-rf', dir])
  }
}

function expectClean(r: Awaited<ReturnType<typeof interrupt>>, moment: Moment, signal: Signal): void {
  expect({code: r.exit.code, signal: r.exit.signal}, r.stderr).toEqual({code: CODE[signal], signal: null})
  if (moment.afterRuns) {
    expect(r.stderr).toContain(`chaos ${signal} came after the last run`)
    expect(r.report).toMatch(/^<!doctype html>/i)
    expect(r.report).toContain('</html>')
  } else {
    expect(r.stderr).toMatch(/chaos interrupted after \d+ of \d+ run\(s\), no verdict; scratch tables dropped/)
  }
  if (!moment.early) expect(r.prefixes.size, 'the run was seen making its tables').toBeGreaterThan(0)
  expect(r.tables).toEqual([])
  expect(r.workers).toEqual([])
}

const matrix = await targets()
const signalFor = (i: number): Signal => (i % 2 === 0 ? 'SIGINT' : 'SIGTERM')

for (const target of matrix) {
  const proxied = target.dialect === 'sqlite' ? 'hang' : 'db-cut'
  const moments = [starting, setup, workersUp, faultProxy(proxied), writingReport]
  describe.skipIf(!target.available || process.platform !== 'linux')(`chaos stopped by a signal on ${target.dialect}`, () => {
    const dropped: (() => Promise<void>)[] = []
    afterAll(async () => {
      for (const drop of dropped) await drop()
    })
    it.each(moments.map((m, i) => [m.name, signalFor(i + matrix.indexOf(target)), m] as const))('%s, %s: no table and no worker left, exit 130/143', {timeout: 150_000}, async (_, signal, moment) => {
      const own = await ownDatabase(target)
      dropped.push(own.drop)
      const r = await interrupt({url: own.url, marker: own.marker, moment, signal})
      expectClean(r, moment, signal)
    })
  })
}

const BROKERS = {amqp: await broker('amqp'), nats: await broker('nats'), redis: await broker('redis')}
for (const [kind, b] of Object.entries(BROKERS) as [keyof typeof BROKERS, (typeof BROKERS)['amqp']][]) {
  // hang twice: SIGTERM, then SIGINT to the group (the workers get it too, mid-hang)
  const moments = [starting, setup, workersUp, faultProxy('broker-down'), faultProxy('hang', 1500), faultProxy('hang', 1500)]
  describe.skipIf(!b.available || process.platform !== 'linux')(`chaos stopped by a signal with --broker ${kind} (SQLite)`, () => {
    it.each(moments.map((m, i) => [m.name, signalFor(i + 1), m] as const))('%s, %s: no queue, stream or key, no table, no worker left, exit 130/143', {timeout: 150_000}, async (_, signal, moment) => {
      const url = sqliteUrl()
      const r = await interrupt({url, marker: url.slice('sqlite:'.length), moment, signal, brokerArgs: ['--broker', b.url]})
      expectClean(r, moment, signal)
      expect(await brokerLeftovers(kind, b.url, r.prefixes)).toEqual([])
    })
  })
}
