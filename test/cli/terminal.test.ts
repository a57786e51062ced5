// The terminal paths of the ops commands, through a real pseudo-terminal (util-linux script):
// replay/archive ask before changing anything, status --watch redraws. SQLite only: the
// behaviour is the CLI's, not the database's.
import {spawn, spawnSync} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {Db} from '../../src/db/index.js'
import {databaseNow} from '../../src/ops/query.js'
import {BIN} from '../helpers/cli.js'
import {insertRows, snapshot} from '../helpers/rows.js'
import {sqliteUrl, uniqueTables} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0
const url = sqliteUrl()
const names = uniqueTables('tty')
const flags = ['--url', url, '--table', names.outbox, '--archive-table', names.archive]

/** Runs the CLI on a pty; answers `answer` once `prompt` appears; resolves with the output. */
function onTerminal(args: string[], options: {prompt?: RegExp; answer?: string; stopWhen?: (output: string) => boolean} = {}): Promise<{output: string; code: number | null}> {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ')
  const child = spawn('script', ['-qfec', command, '/dev/null'], {env: {...process.env, NO_COLOR: '1'}, stdio: ['pipe', 'pipe', 'pipe']})
  let output = ''
  let answered = false
  child.stdout.on('data', (d) => {
    output += d
    if (options.prompt && !answered && options.prompt.test(output)) {
      answered = true
      child.stdin.write(`${options.answer}\n`)
    }
    if (options.stopWhen?.(output)) child.kill('SIGTERM')
  })
  return new Promise((resolve) => child.on('close', (code) => resolve({output, code})))
}

describe.skipIf(!hasScript)('ops commands on a terminal', () => {
  let db: Db
  beforeAll(async () => {
    ;({db} = await openTables(url, names, {inbox: false, archive: true}))
    await insertRows(db, names, await databaseNow(db), [
      {type: 'a', created: -600, failed: -60, attempts: 5},
      {type: 'a', created: -40 * 86400, published: -40 * 86400 + 1},
    ])
  })
  afterAll(() => closeTables(db, names))

  it('replay asks; "n" changes nothing (exit 2), "y" replays', async () => {
    const before = await snapshot(db, names)
    const no = await onTerminal(['replay', ...flags, '--failed'], {prompt: /\[y\/N\]/, answer: 'n'})
    expect(no.output).toContain('Replay 1 event(s)? [y/N]')
    expect(no.output).toContain('cancelled')
    expect(no.code).toBe(2)
    expect(await snapshot(db, names)).toBe(before)
    const yes = await onTerminal(['replay', ...flags, '--failed'], {prompt: /\[y\/N\]/, answer: 'y'})
    expect(yes.code).toBe(0)
    expect(yes.output).toContain('replayed 1 event(s)')
  })

  it('archive asks too, and moves on "y"', async () => {
    const r = await onTerminal(['archive', ...flags, '--before', '30d'], {prompt: /\[y\/N\]/, answer: 'yes'})
    expect(r.output).toContain('Archive 1 event(s)? [y/N]')
    expect(r.code).toBe(0)
    expect(r.output).toMatch(/archived 1 published event/)
  })

  it('status --watch redraws until stopped', async () => {
    const redraws = (output: string) => output.match(/database clock/g)?.length ?? 0
    const r = await onTerminal(['status', ...flags, '--watch', '500ms'], {stopWhen: (output) => redraws(output) >= 2})
    expect(redraws(r.output)).toBeGreaterThanOrEqual(2)
    expect(r.output).toContain('\x1b[2J')
  })
})
