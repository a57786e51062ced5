// Table-driven bad input over every command that touches a database: exit 2, one line on
// stderr naming the problem, no stack trace, no password, and the database exactly as before
// (row count and checksum of every row).
import {spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {existsSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {applyInit} from '../../src/schema/init.js'
import {seedEvents} from '../helpers/events.js'
import {PG_URL, sqliteUrl, targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const root = new URL('../..', import.meta.url).pathname
const matrix = await targets(['postgres'])
const pgAvailable = matrix[0].available
const SECRET = 'Wr0ngPassw0rd'
const tmp = mkdtempSync(join(tmpdir(), 'outbox-bad-'))
afterAll(() => rmSync(tmp, {recursive: true, force: true}))

function run(args: string[]): Promise<{status: number | null; stdout: string; stderr: string}> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/run.js'), ...args], {
      cwd: tmp,
      env: {...process.env, NO_COLOR: '1', OUTBOX_DATABASE_URL: '', DATABASE_URL: ''},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('close', (status) => resolve({status, stdout, stderr}))
  })
}

async function checksum(db: Db, names: TableNames): Promise<string> {
  const rows = await db.query(sql`SELECT * FROM ${raw(db.dialect.render.table(names, 'outbox'))} ORDER BY id`)
  const archived = await db.query(sql`SELECT * FROM ${raw(db.dialect.render.table(names, 'archive'))} ORDER BY id`)
  return `${rows.length}/${archived.length}/${createHash('sha1').update(JSON.stringify([rows, archived])).digest('hex')}`
}

type Case = [label: string, args: (ctx: Ctx) => string[], stderr?: RegExp]
interface Ctx {
  url: string
  t: string[]
}

// Every command with a --url gets the same connection cases.
const connecting: [string, string[]][] = [
  ['status', []],
  ['failed', []],
  ['replay', ['--since', '1h', '--yes']],
  ['archive', ['--before', '30d', '--yes']],
  ['relay', ['--publisher', 'stdout', '--once']],
  ['verify', []],
]

const cases: Case[] = [
  ...connecting.flatMap(([cmd, extra]): Case[] => [
    [`${cmd}: unknown URL scheme`, () => [cmd, '--url', 'oracle://h/db', ...extra], /unsupported database URL/],
    // postgres:///db is the local socket (libpq's meaning) since sockets are supported
    [`${cmd}: URL with several hosts`, () => [cmd, '--url', 'postgres://h1,h2/db', ...extra], /names several hosts/],
    [`${cmd}: unreachable port, password not echoed`, () => [cmd, '--url', `postgres://app:${SECRET}@127.0.0.1:1/db`, ...extra], /cannot reach/],
    [`${cmd}: a password with an unencoded @, not echoed`, () => [cmd, '--url', `postgres://app:${SECRET}@x@127.0.0.1:1/db`, ...extra], /cannot reach|malformed/],
    [`${cmd}: a password with an unencoded ?, not echoed`, () => [cmd, '--url', `postgres://app:${SECRET}?x@127.0.0.1:1/db`, ...extra], /cannot reach|malformed/],
    [`${cmd}: bad --timeout`, (c) => [cmd, '--url', c.url, '--timeout', 'soon', ...extra], /not a duration/],
    // verify works on a scratch table of its own: it has no --table
    ...(cmd === 'verify'
      ? []
      : ([
          [`${cmd}: invalid table identifier`, (c) => [cmd, '--url', c.url, '--table', 'x;drop table y', ...extra], /not a valid identifier/],
          [`${cmd}: reserved word as table`, (c) => [cmd, '--url', c.url, '--table', 'select', ...extra], /reserved/],
          [`${cmd}: unicode identifier`, (c) => [cmd, '--url', c.url, '--table', 'événements', ...extra], /not a valid identifier/],
          [`${cmd}: a database without the outbox tables`, (c) => [cmd, '--url', c.url, '--table', 'no_such_table', ...extra], /does not exist/],
        ] as Case[])),
  ]),
  ['status: negative --max-pending', (c) => ['status', '--url', c.url, ...c.t, '--max-pending', '-1']],
  ['status: non-numeric --max-failed', (c) => ['status', '--url', c.url, ...c.t, '--max-failed', 'many']],
  ['status: --max-age without unit', (c) => ['status', '--url', c.url, ...c.t, '--max-age', '5'], /not a duration/],
  ['status: --window garbage', (c) => ['status', '--url', c.url, ...c.t, '--window', 'lastweek'], /not a duration/],
  ['status: unknown --format', (c) => ['status', '--url', c.url, ...c.t, '--format', 'xml']],
  ['status: unknown --by', (c) => ['status', '--url', c.url, ...c.t, '--by', 'colour']],
  ['failed: --limit 0', (c) => ['failed', '--url', c.url, ...c.t, '--limit', '0']],
  ['failed: --since yesterday', (c) => ['failed', '--url', c.url, ...c.t, '--since', 'yesterday'], /not a time/],
  ['replay: nothing selected', (c) => ['replay', '--url', c.url, ...c.t, '--yes'], /--since/],
  ['replay: --since yesterday', (c) => ['replay', '--url', c.url, ...c.t, '--since', 'yesterday', '--yes'], /not a time/],
  ['replay: --since 2026-13-45', (c) => ['replay', '--url', c.url, ...c.t, '--since', '2026-13-45', '--yes'], /not a time/],
  ['replay: --until before --since', (c) => ['replay', '--url', c.url, ...c.t, '--since', '1h', '--until', '2h', '--yes'], /until/],
  ['replay: --batch 0', (c) => ['replay', '--url', c.url, ...c.t, '--since', '1h', '--batch', '0', '--yes']],
  ['replay: --batch huge', (c) => ['replay', '--url', c.url, ...c.t, '--since', '1h', '--batch', '99999999999', '--yes']],
  ['replay: empty --ids', (c) => ['replay', '--url', c.url, ...c.t, '--ids', '', '--yes']],
  ['replay: without --yes off a terminal', (c) => ['replay', '--url', c.url, ...c.t, '--since', '7d'], /--yes/],
  ['replay: an id the table does not hold', (c) => ['replay', '--url', c.url, ...c.t, '--ids', '00000000-0000-7000-8000-00000000dead', '--yes'], /not in .*nothing changed/],
  ['replay: empty --type', (c) => ['replay', '--url', c.url, ...c.t, '--since', '7d', '--type', '', '--yes'], /--type is empty/],
  ['replay: --since before year 1000', (c) => ['replay', '--url', c.url, ...c.t, '--since', '0000-01-01', '--yes'], /not a time|year/],
  ['replay: --since finer than a millisecond', (c) => ['replay', '--url', c.url, ...c.t, '--since', '2026-01-01T00:00:00.0005Z', '--yes'], /millisecond/],
  ['archive: without --before', (c) => ['archive', '--url', c.url, ...c.t, '--yes'], /Missing required flag before/],
  ['archive: a missing archive table, named', (c) => ['archive', '--url', c.url, ...c.t.slice(0, 4), '--archive-table', 'no_such_archive', '--before', '1h', '--dry-run'], /archive table no_such_archive does not exist/],
  ['failed show: no id', (c) => ['failed', 'show', '--url', c.url, ...c.t], /missing argument ID/],
  ['archive: --before garbage', (c) => ['archive', '--url', c.url, ...c.t, '--before', 'ages', '--yes'], /not a (time|duration)/],
  ['archive: negative --min-published-age', (c) => ['archive', '--url', c.url, ...c.t, '--before', '1h', '--min-published-age', '-1h', '--yes']],
  ['archive: --batch -5', (c) => ['archive', '--url', c.url, ...c.t, '--before', '1h', '--batch', '-5', '--yes']],
  ['archive: --to-file in a missing directory', (c) => ['archive', '--url', c.url, ...c.t, '--before', '1h', '--min-published-age', '1s', '--to-file', '/nonexistent/dir/x.jsonl', '--yes']],
  ['archive: without --yes off a terminal', (c) => ['archive', '--url', c.url, ...c.t, '--before', '1h'], /--yes/],
  ['relay: unknown publisher', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'kafka-ish', '--once']],
  ['relay: --batch 0', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'stdout', '--batch', '0', '--once']],
  ['relay: --lease 0s', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'stdout', '--lease', '0s', '--once']],
  ['relay: --backoff cap below base', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'stdout', '--backoff', '10m..1s', '--once']],
  ['relay: --max-attempts 0', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'stdout', '--max-attempts', '0', '--once']],
  ['relay: http without --target', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'http', '--once']],
  ['relay: http --target with another scheme', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'http', '--target', 'ftp://h/x', '--once']],
  ['relay: --metrics-port out of range', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'stdout', '--metrics-port', '70000', '--once'], /from 0 to 65535/],
  ['relay: nats --subject-prefix without its dot', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'nats', '--target', 'nats://127.0.0.1:4222', '--subject-prefix', 'orders', '--once'], /must end with a dot/],
  ['relay: --publish-timeout longer than a Node timer waits', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'amqp', '--target', 'amqp://127.0.0.1:5672', '--publish-timeout', '30d', '--once'], /amqp publisher: --publish-timeout must be from 1 to/],
  ['relay: --header with no header name', (c) => ['relay', '--url', c.url, ...c.t, '--publisher', 'http', '--target', 'http://127.0.0.1:9/e', '--header', 'bad name: v', '--once'], /--header has "bad name", which is no header name/],
  ['chaos: unknown step', () => ['chaos', '--steps', 'relay.after-lunch']],
  ['chaos: --iterations 0', () => ['chaos', '--iterations', '0']],
  ['chaos: --relays 0', () => ['chaos', '--relays', '0']],
  ['chaos: unknown --strategy', () => ['chaos', '--strategy', 'yolo']],
  ['chaos: missing --scenario module', () => ['chaos', '--scenario', './no-such-scenario.js']],
  ['chaos: unknown URL scheme', () => ['chaos', '--url', 'oracle://h/db']],
  ['chaos: commit-unknown on a database file', () => ['chaos', '--scenarios', 'commit-unknown']],
]

for (const [name, url] of [['sqlite', sqliteUrl()], ...(pgAvailable ? [['postgres', PG_URL]] : [])] as [string, string][]) {
  describe(`bad input changes nothing (${name})`, () => {
    let db: Db
    let names: TableNames
    let before: string
    let ctx: Ctx

    beforeAll(async () => {
      ;({db, names} = await openTables(url, `bad${name.slice(0, 2)}`, {inbox: true, archive: true}))
      const ids = await seedEvents(db, names, {count: 30, base: new Date(Date.now() - 3 * 86_400_000), stepMs: 60_000})
      const t = raw(db.dialect.render.table(names, 'outbox'))
      await db.execute(sql`UPDATE ${t} SET published_at = created_at WHERE id IN (${raw(ids.slice(0, 10).map((i) => `'${i}'`).join(', '))})`)
      await db.execute(sql`UPDATE ${t} SET failed_at = created_at, attempts = 10, last_error = 'boom' WHERE id = ${ids[20]}`)
      // a table with the wrong columns
      await db.execute(sql`CREATE TABLE ${raw(db.dialect.render.quoteIdent(`${names.outbox}_wrong`))} (id TEXT, something TEXT)`)
      ctx = {url, t: ['--table', names.outbox, '--inbox-table', names.inbox, '--archive-table', names.archive]}
      before = await checksum(db, names)
    })
    afterAll(async () => {
      await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.quoteIdent(`${names.outbox}_wrong`))}`).catch(() => {})
      await closeTables(db, names)
    })

    const all: Case[] = [
      ...cases,
      ['status: a table with the wrong columns', (c) => ['status', '--url', c.url, '--table', `${names.outbox}_wrong`], /columns|does not exist/],
      ['replay: a table with the wrong columns', (c) => ['replay', '--url', c.url, '--table', `${names.outbox}_wrong`, '--since', '7d', '--yes'], /columns|does not exist/],
    ]
    for (const [label, args, message] of all) {
      it.concurrent(label, async () => {
        const r = await run(args(ctx))
        const lines = r.stderr.trim().split('\n').filter(Boolean)
        expect({status: r.status, lines: lines.length}, r.stderr).toEqual({status: 2, lines: 1})
        expect(lines[0]).toMatch(/^outbox: /)
        if (message) expect(lines[0]).toMatch(message)
        expect(r.stderr + r.stdout).not.toMatch(/\n\s+at .+:\d+:\d+/)
        expect(r.stderr + r.stdout).not.toContain(SECRET)
      })
    }

    it.runIf(name === 'sqlite')('a mistyped SQLite path is refused and leaves no new file; status leaves the journal mode as it found it', async () => {
      const missing = join(tmp, 'typo.db')
      for (const [cmd, extra] of connecting) {
        const r = await run([cmd, '--url', `sqlite:${missing}`, ...extra])
        expect({status: r.status, stderr: r.stderr.trim()}, cmd).toEqual({status: 2, stderr: `outbox: no SQLite database at ${missing}. Check the path in --url, or create it with: outbox init --url URL --apply`})
        expect(existsSync(missing), cmd).toBe(false)
      }
      const file = join(tmp, 'rollback-journal.db')
      const plain = await openDb(`sqlite:${file}`)
      await applyInit(plain, names, {inbox: false, archive: true})
      await plain.close()
      const Database = (await import('better-sqlite3')).default
      const set = new Database(file)
      set.pragma('journal_mode = DELETE')
      set.close()
      expect((await run(['status', '--url', `sqlite:${file}`, ...ctx.t.slice(0, 2)])).status).toBe(0)
      expect((await run(['failed', '--url', `sqlite:${file}`, ...ctx.t.slice(0, 2)])).status).toBe(0)
      const check = new Database(file, {readonly: true})
      expect(check.pragma('journal_mode', {simple: true})).toBe('delete')
      check.close()
    })

    it('and the tables are exactly as before', async () => {
      expect(await checksum(db, names)).toBe(before)
    })
  })
}
