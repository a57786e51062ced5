// The CLI as a user runs it: ./bin/run.js (built by test/global-setup.ts), exit codes, output,
// and bad input that must give one line on stderr, exit 2, no stack, no password, no change.
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type DialectName} from '../../dialects/index.js'
import {openDb} from '../../src/db/index.js'
import {dropTables, MYSQL_URL, PG_URL, sqliteUrl, targets, uniqueTables} from '../helpers/targets.js'

const root = new URL('../..', import.meta.url).pathname
const matrix = await targets()
const available = (d: DialectName) => matrix.find((t) => t.dialect === d)!.available
const SECRET = 'Sup3rS3cret'
const tmp = mkdtempSync(join(tmpdir(), 'outbox-cli-'))
afterAll(() => rmSync(tmp, {recursive: true, force: true}))

function run(args: string[], nodeArgs: string[] = [], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [...nodeArgs, join(root, 'bin/run.js'), ...args], {
    encoding: 'utf8',
    cwd: tmp,
    env: {...process.env, NO_COLOR: '1', OUTBOX_DATABASE_URL: '', DATABASE_URL: '', ...env},
  })
  return {status: r.status, stdout: r.stdout, stderr: r.stderr}
}

describe('outbox init --dialect prints the DDL', () => {
  for (const dialect of ['postgres', 'mysql', 'mariadb', 'sqlite']) {
    it(dialect, () => {
      const r = run(['init', '--dialect', dialect])
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      expect(r.stdout).toMatch(/^-- outbox schema for (postgres|mysql|sqlite)/)
      expect(r.stdout.match(/CREATE TABLE IF NOT EXISTS/g)).toHaveLength(3)
    })
  }
})

describe('outbox sql claim, both styles', () => {
  const expected: Record<string, {inline: RegExp; params: RegExp}> = {
    postgres: {inline: /WITH c AS MATERIALIZED[\s\S]*LIMIT 100\s+FOR UPDATE SKIP LOCKED[\s\S]*RETURNING/, params: /e\.created_at >= \$1::timestamptz[\s\S]*lease_owner = \$2[\s\S]*t\.created_at >= \$4::timestamptz[\s\S]*-- params: \["-infinity","relay-1",30000,"-infinity"\]/},
    mysql: {inline: /READ COMMITTED;[\s\S]*START TRANSACTION;[\s\S]*FOR UPDATE SKIP LOCKED;\nSET @outbox_claim_from = [\s\S]*\nUPDATE `outbox_events` FORCE INDEX \(PRIMARY\) SET [\s\S]*AND created_at BETWEEN @outbox_claim_from AND @outbox_claim_to;\nCOMMIT;/, params: /FOR UPDATE SKIP LOCKED;\nUPDATE `outbox_events` FORCE INDEX \(PRIMARY\) SET lease_owner = \?[\s\S]*WHERE id IN \(\?, \?\) AND created_at BETWEEN \? AND \?;\n-- params: \["relay-1",30000000,"<id 1>","<id 2>","<created_at of id 1>","<created_at of id 2>"\]/},
    sqlite: {inline: /UPDATE "outbox_events"[\s\S]*WHERE id IN \([\s\S]*LIMIT 100\n\)\nRETURNING/, params: /lease_owner = \?[\s\S]*-- params: \["relay-1","\+30\.000 seconds"\]/},
  }
  for (const [dialect, want] of Object.entries(expected)) {
    it(`${dialect}: runnable (inlined) and --params`, () => {
      const inline = run(['sql', 'claim', '--dialect', dialect, '--owner', 'relay-1'])
      expect(inline.stderr).toBe('')
      expect(inline.status).toBe(0)
      expect(inline.stdout).toMatch(want.inline)
      expect(inline.stdout).toContain("'relay-1'")
      const params = run(['sql', 'claim', '--dialect', dialect, '--owner', 'relay-1', '--params'])
      expect(params.status).toBe(0)
      expect(params.stdout).toMatch(want.params)
      expect(params.stdout).not.toContain("'relay-1'")
    })
  }
  it("postgres: the claim's low-water mark, inlined as the full claim's -infinity; --claim-from start drops it", () => {
    expect(run(['sql', 'claim', '--dialect', 'postgres']).stdout).toContain("WHERE e.created_at >= '-infinity'::timestamptz AND e.published_at IS NULL")
    const start = run(['sql', 'claim', '--dialect', 'postgres', '--claim-from', 'start'])
    expect(start.status).toBe(0)
    expect(start.stdout).toContain('WHERE e.published_at IS NULL')
    expect(start.stdout).not.toContain('created_at >=')
    const sqlite = run(['sql', 'claim', '--dialect', 'sqlite', '--claim-from', 'mark'])
    expect(sqlite.status).toBe(2)
    expect(sqlite.stderr).toMatch(/--claim-from 'mark' is not available on SQLite\. Use --claim-from 'start'/)
  })
  it('mysql: the mark is opt-in: --claim-from mark seeks the claim index from DATETIME\'s least value; the default claims from the start', () => {
    const mark = run(['sql', 'claim', '--dialect', 'mysql', '--claim-from', 'mark'])
    expect(mark.status).toBe(0)
    expect(mark.stdout).toContain("WHERE e.created_at >= CAST('1000-01-01 00:00:00.000000' AS DATETIME(6)) AND e.published_at IS NULL")
    expect(run(['sql', 'claim', '--dialect', 'mysql']).stdout).not.toContain('created_at >=')
  })
})

describe('outbox sql mark-published, retry, release: exit 0 with the statement on stdout', () => {
  const id = '0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f'
  for (const args of [
    ['sql', 'mark-published', '--dialect', 'postgres', '--ids', id],
    ['sql', 'retry', '--dialect', 'mysql', '--owner', 'relay-1', '--id', id, '--error', 'HTTP 503'],
    ['sql', 'release', '--dialect', 'sqlite', '--owner', 'relay-1', '--ids', id],
  ]) {
    it(args.slice(0, 2).join(' '), () => {
      const r = run(args)
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      expect(r.stdout).toMatch(/^UPDATE /m)
      expect(r.stdout).toContain(id)
    })
  }
})

// What scripts may rely on: a change here is a change of the contract (README's table too).
// Each code has its own test in the command's file (test/cli, test/ops, test/consume, test/chaos, test/dialects).
describe('every command states its exit codes in --help', () => {
  const EXIT_CODES: Record<string, string[]> = {
    init: ['0', '2'],
    'sql:claim': ['0', '2'],
    'sql:mark-published': ['0', '2'],
    'sql:retry': ['0', '2'],
    'sql:release': ['0', '2'],
    verify: ['0', '1', '2', '130/143'],
    relay: ['0', '1', '2', '130/143'],
    consume: ['0', '1', '2', '130/143'],
    status: ['0', '1', '2'],
    failed: ['0', '2'],
    'failed:show': ['0', '2'],
    replay: ['0', '2', '130/143'],
    archive: ['0', '2', '130/143'],
    partitions: ['0', '2'],
    chaos: ['0', '1', '2', '130/143'],
    config: ['0', '2'],
    version: ['0', '2'],
  }
  const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, {description?: string}>}

  it('every command in the manifest has its codes here', () => {
    expect(Object.keys(EXIT_CODES).sort()).toEqual(Object.keys(manifest.commands).sort())
  })

  for (const [id, codes] of Object.entries(EXIT_CODES)) {
    it(`${id}: ${codes.join(', ')}`, () => {
      const line = /^Exit codes: (.*)$/m.exec(manifest.commands[id].description ?? '')?.[1]
      expect(line, `outbox ${id.replace(':', ' ')} --help has no "Exit codes:" line`).toBeDefined()
      expect([...line!.matchAll(/(?:^|, )(\d+(?:\/\d+)?) /g)].map((m) => m[1])).toEqual(codes)
      const help = run([...id.split(':'), '--help'])
      expect(help.status).toBe(0)
      expect(help.stdout).toContain('Exit codes: 0 ')
    })
  }
})

describe('outbox init --url --apply, twice', () => {
  for (const target of matrix) {
    it.skipIf(!target.available)(`${target.dialect}: creates, then reports up to date and changes nothing`, async () => {
      const names = uniqueTables(`cli${target.dialect.slice(0, 2)}`)
      const args = ['init', '--url', target.url, '--apply', '--table', names.outbox, '--inbox-table', names.inbox, '--archive-table', names.archive]
      const db = await openDb(target.url, {poolSize: 1})
      try {
        const first = run(args)
        expect(first.stderr).toBe('')
        expect(first.status).toBe(0)
        expect(first.stdout).toMatch(new RegExp(`^created  table ${names.outbox}$`, 'm'))
        expect(first.stdout).toMatch(/created \d+ object\(s\)\n$/)
        const objects = async () => (await db.query<{kind: string; name: string}>(db.dialect.ddl.existingObjects(names))).map((r) => `${r.kind}:${r.name}`).sort()
        const before = await objects()
        expect(before.filter((o) => o.startsWith('table:'))).toHaveLength(3)
        const second = run([...args, '--json'])
        expect(second.status).toBe(0)
        const result = JSON.parse(second.stdout) as {upToDate: boolean; statements: {status: string}[]}
        expect(result.upToDate).toBe(true)
        expect(result.statements.every((s) => s.status === 'exists')).toBe(true)
        expect(run(args).stdout).toMatch(/up to date: nothing changed\n$/)
        expect(await objects()).toEqual(before)
      } finally {
        await dropTables(db, names)
        await db.close()
      }
    })
  }
})

describe('bad input: exit 2, one line on stderr, no stack, no password, nothing changed', () => {
  const sqliteFile = join(tmp, 'untouched.db')
  const sqlite = `sqlite:${sqliteFile}`
  // tables a half-validated run would create: they must not exist afterwards
  const guard = uniqueTables('clibad')
  const guardFlags = ['--inbox-table', guard.inbox, '--archive-table', guard.archive]
  const wrongUser = `outbox_cli_${process.pid}`
  const pgWith = (userinfo: string, path = '/test') => PG_URL.replace(/\/\/[^/]*@/, `//${userinfo}@`).replace(/\/[^/]*$/, path)
  const myHost = new URL(MYSQL_URL).host

  type Case = [label: string, args: string[], message: RegExp, needs?: DialectName]
  const cases: Case[] = [
    ['unknown dialect (init)', ['init', '--dialect', 'oracle'], /unknown dialect "oracle". Use one of: postgres, mysql, sqlite/],
    ['unknown dialect (sql claim)', ['sql', 'claim', '--dialect', 'db2'], /unknown dialect "db2"/],
    ['no dialect and no URL', ['init'], /init needs --dialect/],
    ['unknown flag', ['init', '--dialekt', 'postgres'], /Nonexistent flag: --dialekt. Did you mean --dialect\?/],
    ['malformed URL', ['init', '--apply', '--url', `postgres://app:${SECRET}@[bad/x`], /malformed database URL/],
    ['port out of range', ['init', '--apply', '--url', `postgres://app:${SECRET}@127.0.0.1:99999/x`], /malformed database URL|out of range/],
    ['unknown scheme', ['init', '--apply', '--url', `redis://app:${SECRET}@127.0.0.1:6379/0`], /unsupported database URL "redis:\/\/app:\*\*\*@127.0.0.1:6379\/0"/],
    ['not a URL', ['init', '--apply', '--url', 'outbox.db'], /unsupported database URL "outbox.db"/],
    ['unreachable port (postgres)', ['init', '--apply', '--url', `postgres://app:${SECRET}@127.0.0.1:1/test`], /cannot reach the database at postgres:\/\/app:\*\*\*@127.0.0.1:1\/test \(ECONNREFUSED\)/],
    ['unreachable port (mysql)', ['init', '--apply', '--url', `mysql://root:${SECRET}@127.0.0.1:2/test`], /cannot reach the database .*ECONNREFUSED/],
    ['unknown host', ['init', '--apply', '--url', `mysql://root:${SECRET}@no-such-host.invalid/test`], /cannot reach the database .*(ENOTFOUND|EAI_AGAIN)/],
    ['wrong password (mariadb)', ['init', '--apply', '--url', `mysql://${wrongUser}:${SECRET}@${myHost}/test`, '--table', guard.outbox, ...guardFlags], /the database refused the login .*Check the user and password/, 'mysql'],
    ['missing database (postgres)', ['init', '--apply', '--url', pgWith(`postgres:${SECRET}`, '/no_such_db_outbox')], /database does not exist .*no_such_db_outbox/, 'postgres'],
    ['missing database (mysql)', ['init', '--apply', '--url', MYSQL_URL.replace(/\/[^/]*$/, '/no_such_db_outbox')], /database does not exist/, 'mysql'],
    ['sqlite directory missing', ['init', '--apply', '--url', `sqlite:${join(tmp, 'nope', 'x.db')}`], /cannot open the SQLite database/],
    ['identifier with a quote', ['init', '--apply', '--url', sqlite, '--table', 'a"b', ...guardFlags], /--table "a\\"b" is not a valid identifier/],
    ['identifier with a semicolon', ['init', '--apply', '--url', sqlite, '--table', 'a;drop table x', ...guardFlags], /is not a valid identifier/],
    ['identifier with a space', ['sql', 'claim', '--dialect', 'postgres', '--table', 'my events'], /--table "my events" is not a valid identifier/],
    ['unicode identifier', ['init', '--dialect', 'mysql', '--table', 'événements'], /--table "événements" is not a valid identifier/],
    ['reserved word', ['init', '--apply', '--url', sqlite, '--table', 'select', ...guardFlags], /--table "select" is a reserved SQL word/],
    ['identifier too long', ['init', '--dialect', 'postgres', '--table', 'x'.repeat(70)], /is 70 characters; at most \d+ fit on postgres/],
    ['empty identifier', ['init', '--dialect', 'sqlite', '--inbox-table', ''], /--inbox-table is empty/],
    ['schema on a dialect without', ['init', '--dialect', 'mysql', '--schema', 'app'], /--schema names a schema; MySQL\/MariaDB has none/],
    ['zero batch', ['sql', 'claim', '--dialect', 'postgres', '--batch', '0'], /--batch must be between 1 and 100000/],
    ['negative batch', ['sql', 'claim', '--dialect', 'mysql', '--batch', '-5'], /--batch "-5" is not a positive whole number/],
    ['non-numeric batch', ['sql', 'claim', '--dialect', 'sqlite', '--batch', 'ten'], /--batch "ten" is not a positive whole number/],
    ['fractional batch', ['sql', 'claim', '--dialect', 'sqlite', '--batch', '1.5'], /--batch "1.5" is not a positive whole number/],
    ['duration without unit', ['sql', 'claim', '--dialect', 'postgres', '--lease', '30'], /--lease "30" is not a duration. Use a number with a unit/],
    ['unparseable duration', ['sql', 'retry', '--dialect', 'postgres', '--delay', 'soon'], /--delay "soon" is not a duration/],
    // retry and release change only the lease its owner holds: a made-up owner would match nothing
    ['a command that does not exist, with the nearest one', ['stauts'], /^outbox: "stauts" is not an outbox command. Did you mean: outbox status\?$/],
    ['retry without --owner', ['sql', 'retry', '--dialect', 'postgres', '--id', '0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e8f'], /--owner is required/],
    ['release without --owner', ['sql', 'release', '--dialect', 'sqlite'], /--owner is required/],
    ['an id that is no UUID', ['sql', 'mark-published', '--dialect', 'postgres', '--ids', 'notauuid'], /--ids: "notauuid" is not an event id/],
    ['negative duration', ['sql', 'claim', '--dialect', 'postgres', '--lease', '-1s'], /--lease "-1s" is not a duration/],
    ['zero duration', ['sql', 'claim', '--dialect', 'postgres', '--lease', '0s'], /--lease must be greater than zero/],
    ['unparseable --timeout', ['init', '--dialect', 'postgres', '--timeout', 'later'], /--timeout "later" is not a duration/],
    ['verify: zero claimers', ['verify', '--url', sqlite, '--claimers', '0'], /--claimers must be between 1 and 64/],
    ['verify: in-memory SQLite', ['verify', '--url', 'sqlite::memory:'], /verify needs a SQLite file/],
    ['verify: wrong password (mariadb)', ['verify', '--url', `mysql://${wrongUser}:${SECRET}@${myHost}/test`], /the database refused the login/, 'mysql'],
  ]

  beforeAll(async () => {
    if (!available('mysql')) return
    const db = await openDb(MYSQL_URL, {poolSize: 1})
    await db.execute(sql`${raw(`CREATE USER IF NOT EXISTS '${wrongUser}'@'%' IDENTIFIED BY 'the-right-one'`)}`)
    await db.close()
  })
  afterAll(async () => {
    if (!available('mysql')) return
    const db = await openDb(MYSQL_URL, {poolSize: 1})
    await db.execute(sql`${raw(`DROP USER IF EXISTS '${wrongUser}'@'%'`)}`)
    await db.close()
  })

  for (const [label, args, message, needs] of cases) {
    it.skipIf(needs !== undefined && !available(needs))(label, () => {
      const r = run(args)
      expect(r.status, r.stderr).toBe(2)
      expect(r.stdout).toBe('')
      const lines = r.stderr.split('\n').filter(Boolean)
      expect(lines, r.stderr).toHaveLength(1)
      expect(lines[0]).toMatch(/^outbox: /)
      expect(lines[0]).toMatch(message)
      expect(lines[0]).not.toMatch(/\bat .+:\d+:\d+|Error:/)
      expect(r.stdout + r.stderr).not.toContain(SECRET)
    })
  }

  it('changed nothing: no SQLite file created, no guard tables on the servers', async () => {
    expect(existsSync(sqliteFile) ? readFileSync(sqliteFile).length : 0).toBe(0)
    for (const target of matrix.filter((t) => t.available && t.dialect !== 'sqlite')) {
      const db = await openDb(target.url, {poolSize: 1})
      try {
        expect(await db.query(db.dialect.ddl.existingObjects(guard))).toEqual([])
      } finally {
        await db.close()
      }
    }
  })

  it('the password is scrubbed from a --json error too', () => {
    const r = run(['init', '--apply', '--json', '--url', `postgres://app:${SECRET}@127.0.0.1:1/test`])
    expect(r.status).toBe(2)
    expect(JSON.parse(r.stdout).error.message).toMatch(/postgres:\/\/app:\*\*\*@127.0.0.1:1/)
    expect(r.stdout + r.stderr).not.toContain(SECRET)
  })
})

describe('--help shows typed defaults as written', () => {
  it('relay: durations, a backoff and numbers', () => {
    const r = run(['relay', '--help'])
    expect(r.status, r.stderr).toBe(0)
    // the column's width follows the widest flag (--mark-margin=DURATION)
    for (const shown of [/--lease=DURATION +\[default: 30s\]/, /--backoff=BASE\.\.CAP +\[default: 1s\.\.10m\]/, /--batch=N +\[default: 100\]/, /--poll=DURATION +\[default: 1s\]/]) {
      expect(r.stdout).toMatch(shown)
    }
  })
})

describe('start-up: what a command does not need, it does not load', () => {
  // Kysely is ESM (seen by the hook's load hook); the drivers are CommonJS (seen in the require cache)
  const HEAVY = ['kysely', 'pg', 'mysql2', 'better-sqlite3', 'amqplib', 'nats', 'redis', '@redis', '@opentelemetry']
  function loadedHeavy(args: string[], status: number): string[] {
    const file = join(tmp, `loaded-${Math.random().toString(36).slice(2)}.txt`)
    const r = run(args, ['--require', join(root, 'test/helpers/loaded-modules.cjs')], {OUTBOX_LOADED_MODULES: file})
    expect(r.status, r.stderr).toBe(status)
    const loaded = readFileSync(file, 'utf8').split('\n')
    expect(loaded.some((f) => f.includes('/node_modules/@oclif/core/')), 'the hook saw no CommonJS modules at all').toBe(true)
    expect(loaded.some((f) => f.endsWith('/bin/run.js')), 'the hook saw no ES modules at all').toBe(true)
    return HEAVY.filter((d) => loaded.some((f) => f.includes(`/node_modules/${d}/`)))
  }

  // one bad flag value per command, refused while the flags are parsed (no database needed)
  const BAD_INPUT: Record<string, string[]> = {
    init: ['init', '--dialect', 'oracle'],
    status: ['status', '--window', 'lastweek'],
    failed: ['failed', '--since', 'yesterday'],
    'failed:show': ['failed', 'show', 'notanid'],
    replay: ['replay', '--since', 'yesterday'],
    archive: ['archive', '--before', 'ages'],
    partitions: ['partitions', '--ensure', 'soon'],
    relay: ['relay', '--publisher', 'stdout', '--batch', '0'],
    verify: ['verify', '--claimers', '0'],
    chaos: ['chaos', '--scenarios', 'none,nope'],
    consume: ['consume', '--from', 'amqp://127.0.0.1', '--consumer', 'c', '--handler', 'h.js', '--retry-delay', 'soon'],
    config: ['config', 'relay', '--batch', '0'],
    version: ['version', '--bogus'],
    'sql:claim': ['sql', 'claim', '--dialect', 'postgres', '--lease', 'soon'],
    'sql:retry': ['sql', 'retry', '--dialect', 'postgres', '--max-attempts', 'many'],
    'sql:release': ['sql', 'release', '--dialect', 'postgres', '--ids', 'notauuid'],
    'sql:mark-published': ['sql', 'mark-published', '--dialect', 'postgres', '--ids', ','],
  }

  it('every command has its bad-input case here', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, unknown>}
    expect(Object.keys(BAD_INPUT).sort()).toEqual(Object.keys(manifest.commands).sort())
  })

  for (const [id, bad] of Object.entries(BAD_INPUT)) {
    it(`${id}: --help and bad input load no Kysely and no driver`, () => {
      expect(loadedHeavy([...id.split(':'), '--help'], 0)).toEqual([])
      expect(loadedHeavy(bad, 2)).toEqual([])
    })
  }

  it('a command that prints SQL loads none', () => {
    expect(loadedHeavy(['init', '--dialect', 'postgres'], 0)).toEqual([])
    expect(loadedHeavy(['sql', 'claim', '--dialect', 'mysql'], 0)).toEqual([])
  })

  it('control: a command that connects loads its driver, and only that one; one that queries loads Kysely', () => {
    const url = sqliteUrl()
    expect(loadedHeavy(['init', '--apply', '--url', url, '--no-inbox', '--no-archive'], 0)).toEqual(['better-sqlite3'])
    expect(loadedHeavy(['status', '--url', url], 0)).toEqual(['kysely', 'better-sqlite3'])
  })
})
