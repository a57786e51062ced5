// `outbox status --watch` on a real terminal: tmux runs it in a pseudo-terminal while the
// table changes under it, and the drawn screen (tmux capture-pane) is read back: the table,
// and sparklines of pending, oldest age and p99 beside today's figures. SQLite: the drawing
// is the CLI's, not the database's. Off a terminal: plain lines (the contrast).
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {Db} from '../../src/db/index.js'
import {databaseNow} from '../../src/ops/query.js'
import {BIN, cliAsync} from '../helpers/cli.js'
import {until} from '../helpers/publishers.js'
import {insertRows, type RowSpec} from '../helpers/rows.js'
import {sqliteUrl, uniqueTables} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const hasTmux = spawnSync('tmux', ['-V']).status === 0
if (!hasTmux) {
  const hint = 'tmux not found (apt-get install tmux)'
  if (process.env.CI === 'true') throw new Error(`${hint}: required in CI`)
  console.warn(`[outbox tests] SKIPPING status --watch on a terminal: ${hint}`)
}

const url = sqliteUrl()
const names = uniqueTables('watch')
const flags = ['--url', url, '--table', names.outbox]
const socketDir = mkdtempSync(join(tmpdir(), 'outbox-tmux-')) // a tmux server of this file's own
const tmux = (...args: string[]) => spawnSync('tmux', ['-S', join(socketDir, 'socket'), ...args], {encoding: 'utf8'})
const screen = () => tmux('capture-pane', '-p', '-t', 'watch').stdout
const shellQuote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`

/** the sparkline and the figure of one trend line on the screen */
function trend(text: string, label: string): {line: string; figure: string} | undefined {
  const m = new RegExp(`^  ${label.padEnd(10)} ([ ▁▂▃▄▅▆▇█]+?)  (\\S+(?: \\S+)?)$`, 'm').exec(text)
  return m ? {line: m[1], figure: m[2]} : undefined
}

describe.skipIf(!hasTmux)('status --watch', () => {
  let db: Db
  beforeAll(async () => {
    ;({db} = await openTables(url, names, {inbox: false, archive: false}))
  })
  afterAll(async () => {
    if (hasTmux) tmux('kill-server')
    rmSync(socketDir, {recursive: true, force: true})
    await closeTables(db, names)
  })

  it('draws sparklines of pending, oldest age and p99 beside the figures, in a pseudo-terminal', async () => {
    const command = [process.execPath, BIN, 'status', ...flags, '--watch', '200ms'].map(shellQuote).join(' ')
    // remain-on-exit: the pane outlives the command, so what it last drew (an error too) stays to read
    const started = tmux('start-server', ';', 'set-option', '-g', 'remain-on-exit', 'on', ';', 'new-session', '-d', '-s', 'watch', '-x', '100', '-y', '40', '-e', 'NO_COLOR=1', command)
    expect(started.status, started.stderr).toBe(0)
    const shows = async (what: (text: string) => boolean, label: string) => {
      await until(() => what(screen()), 30_000, label).catch((error: Error) => {
        throw new Error(`${error.message}; the screen:\n${screen()}`)
      })
    }
    await shows((s) => trend(s, 'pending')?.figure === '0', 'pending 0')

    // the backlog grows and ages; events start to be published, then slower
    const stages: [string, RowSpec[]][] = [
      ['5', [...Array.from({length: 5}, () => ({created: -60})), {created: -100, published: -98}]],
      ['15', [...Array.from({length: 10}, () => ({created: -300})), {created: -100, published: -96}, {created: -100, published: -92}]],
      ['30', [...Array.from({length: 15}, () => ({created: -600})), ...Array.from({length: 3}, () => ({created: -100, published: -92}))]],
    ]
    for (const [pending, rows] of stages) {
      await insertRows(db, names, await databaseNow(db), rows)
      await shows((s) => trend(s, 'pending')?.figure === pending, `pending ${pending}`)
      await new Promise((resolve) => setTimeout(resolve, 500)) // a few reads at this stage
    }
    const text = screen()
    expect(text).toContain('database clock') // the table is drawn above
    expect(text).toMatch(/^over the last \d+ read\(s\):$/m)
    expect(text).toContain('(every 200ms; Ctrl-C to stop)')

    const pending = trend(text, 'pending')!
    expect(pending.line.startsWith('▁'), pending.line).toBe(true) // 0 when watching began
    expect(pending.line.endsWith('█'), pending.line).toBe(true) // 30 now, the most
    expect([...pending.line].sort().join(''), 'pending only grew: its blocks never go down').toBe(pending.line)
    expect(new Set(pending.line).size, pending.line).toBeGreaterThanOrEqual(3) // 0, 5, 15, 30: several heights

    const oldest = trend(text, 'oldest age')!
    expect(oldest.figure).toMatch(/^10m( \d+s)?$/)
    expect(oldest.line.startsWith('▁') && oldest.line.endsWith('█'), oldest.line).toBe(true)

    const p99 = trend(text, 'p99')!
    expect(p99.figure).toBe('8s')
    expect(p99.line.startsWith(' '), `no latency before anything was published: ${JSON.stringify(p99.line)}`).toBe(true)
    expect(p99.line.endsWith('█'), p99.line).toBe(true)
    expect(p99.line.length).toBe(pending.line.length) // one column per read on every line

    tmux('send-keys', '-t', 'watch', 'C-c')
    // the pane is dead: the command ended (tmux does not always fill in how: its exit status
    // or signal can stay empty when the pty closes first)
    const dead = () => tmux('display-message', '-p', '-t', 'watch', '#{pane_dead}').stdout.trim() === '1'
    await until(dead, 10_000, 'the command to stop on Ctrl-C').catch((error: Error) => {
      throw new Error(`${error.message}; the screen:\n${screen()}`)
    })
  })

  it('off a terminal: one plain line per read, no escape codes', async () => {
    const run = cliAsync(['status', ...flags, '--watch', '100ms'])
    await until(() => run.output().stdout.split('\n').length > 2, 30_000, 'two lines')
    run.child.kill('SIGTERM')
    const {stdout} = await run.done
    const lines = stdout.trimEnd().split('\n')
    for (const line of lines) expect(line).toMatch(/^\S+Z pending=30 in_flight=0 expired=0 retrying=0 failed=0 oldest_s=\d+(\.\d+)? published=6 p99_s=8$/)
    expect(stdout).not.toContain('\x1b')
  })
})
