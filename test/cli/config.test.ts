// The config file and `outbox config`: precedence (flag, OUTBOX_* variable, file, DATABASE_URL,
// default), ${NAME} from the environment, every key and value checked with its path before
// anything connects, and the file's JSON Schema made from the commands' flags.
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Ajv2020} from 'ajv/dist/2020.js'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {cli} from '../helpers/cli.js'

const root = new URL('../..', import.meta.url).pathname
const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, {id: string; hidden?: boolean; flags: Record<string, unknown>}>}
const schema = JSON.parse(readFileSync(join(root, 'schemas/config.schema.json'), 'utf8'))
/** no URL or config from the machine running the tests */
const CLEAN = {OUTBOX_DATABASE_URL: '', DATABASE_URL: '', OUTBOX_CONFIG: '', OUTBOX_TARGET: ''}

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'outbox-config-'))
})
afterAll(() => rmSync(dir, {recursive: true, force: true}))

function withFile(content: unknown, name = 'outbox.config.json'): string {
  writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content))
  return join(dir, name)
}

function settingsOf(args: string[], env: Record<string, string> = {}) {
  const r = cli(['config', ...args, '--json'], {cwd: dir, env: {...CLEAN, ...env}})
  expect(r.stderr).toBe('')
  expect(r.status).toBe(0)
  const report = JSON.parse(r.stdout) as {settings: {flag: string; value: string | null; source: string; from: string | null}[]}
  return Object.fromEntries(report.settings.map((s) => [s.flag, s]))
}

describe('precedence: a flag, then OUTBOX_*, then the file, then DATABASE_URL, then the default', () => {
  beforeAll(() => withFile({url: 'sqlite:from-file.db', table: 'file_outbox', status: {window: '2h'}}))

  it('the file beats DATABASE_URL (it lost to it before) and the defaults', () => {
    const s = settingsOf(['status'], {DATABASE_URL: 'sqlite:from-database-url.db'})
    expect(s.url).toMatchObject({value: 'sqlite:from-file.db', source: 'file', from: 'url in outbox.config.json'})
    expect(s.table).toMatchObject({value: 'file_outbox', source: 'file'})
    expect(s.window).toMatchObject({value: '2h', source: 'file', from: 'status.window in outbox.config.json'})
    expect(s.format).toMatchObject({value: 'table', source: 'default'})
  })

  it('OUTBOX_DATABASE_URL beats the file; a flag beats both', () => {
    expect(settingsOf(['status'], {OUTBOX_DATABASE_URL: 'sqlite:from-env.db'}).url).toMatchObject({value: 'sqlite:from-env.db', source: 'env', from: 'OUTBOX_DATABASE_URL'})
    const s = settingsOf(['status', '--url', 'sqlite:from-flag.db', '--window', '5m'], {OUTBOX_DATABASE_URL: 'sqlite:from-env.db'})
    expect(s.url).toMatchObject({value: 'sqlite:from-flag.db', source: 'flag'})
    expect(s.window).toMatchObject({value: '5m', source: 'flag'})
  })

  it('DATABASE_URL is the last resort for the URL', () => {
    withFile({table: 'file_outbox'})
    expect(settingsOf(['status'], {DATABASE_URL: 'sqlite:from-database-url.db'}).url).toMatchObject({value: 'sqlite:from-database-url.db', source: 'env', from: 'DATABASE_URL'})
    withFile({url: 'sqlite:from-file.db', table: 'file_outbox', status: {window: '2h'}})
  })

  it('--config and OUTBOX_CONFIG choose another file', () => {
    const other = withFile({url: 'sqlite:other.db'}, 'other.json')
    expect(settingsOf(['status', '--config', other]).url).toMatchObject({value: 'sqlite:other.db', from: `url in ${other}`})
    expect(settingsOf(['status'], {OUTBOX_CONFIG: other}).url).toMatchObject({value: 'sqlite:other.db'})
  })

  it('chaos takes no top-level url (it drops tables): only its own section', () => {
    expect(settingsOf(['chaos']).url).toMatchObject({source: 'unset'})
    withFile({url: 'sqlite:from-file.db', chaos: {url: 'sqlite:chaos.db', iterations: 2}})
    expect(settingsOf(['chaos']).url).toMatchObject({value: 'sqlite:chaos.db', source: 'file'})
    withFile({url: 'sqlite:from-file.db', table: 'file_outbox', status: {window: '2h'}})
  })

  it('passwords are masked, in the table and in --json', () => {
    withFile({url: 'postgres://app:s3cret-pw@db.example/app', relay: {target: 'amqp://user:mq-pw@mq.example'}})
    const json = cli(['config', 'relay', '--json'], {cwd: dir, env: CLEAN})
    const table = cli(['config', 'relay'], {cwd: dir, env: CLEAN})
    for (const out of [json.stdout, table.stdout]) {
      expect(out).toContain('postgres://app:***@db.example/app')
      expect(out).not.toMatch(/s3cret-pw|mq-pw/)
    }
    expect(table.stdout).toMatch(/--target\s+│ amqp:\/\/user:\*\*\*@mq\.example\s+│ file: relay\.target in outbox\.config\.json/)
    withFile({url: 'sqlite:from-file.db', table: 'file_outbox', status: {window: '2h'}})
  })
})

describe('${NAME} reads the environment', () => {
  it('replaces it, and $${ is a literal', () => {
    withFile({relay: {target: 'amqp://u:${MQ_PASSWORD}@mq', source: 'urn:$${not-a-var}'}})
    const s = settingsOf(['relay'], {MQ_PASSWORD: 'pw'})
    expect(s.target).toMatchObject({value: 'amqp://u:***@mq', source: 'file'})
    expect(s.source).toMatchObject({value: 'urn:${not-a-var}'})
  })
  it('an unset variable is one line naming the key, exit 2', () => {
    withFile({relay: {target: '${MQ_URL_UNSET}'}})
    const r = cli(['relay', '--publisher', 'stdout', '--once'], {cwd: dir, env: CLEAN})
    expect(r.status).toBe(2)
    expect(r.stderr.trim()).toBe('outbox: relay.target in outbox.config.json reads ${MQ_URL_UNSET}, which is not set. Set MQ_URL_UNSET in the environment, or write the value into the file')
  })
})

describe('bad files: one line with the key path, exit 2, before connecting', () => {
  const cases: [string, unknown, RegExp][] = [
    ['not JSON', '{"url": ', /^outbox: config file outbox\.config\.json is not valid JSON/],
    ['not an object', '[1]', /is not a JSON object/],
    ['unknown top-level key', {urll: 'x'}, /outbox\.config\.json: unknown key "urll"\. Top-level keys are url, table, inboxTable, archiveTable, schema and a section per command/],
    ['unknown key in a section', {relay: {batchSize: 5}}, /outbox\.config\.json: relay\.batchSize is not a setting of outbox relay\. Its settings: .*\bbatch\b/],
    ['a section that is no object', {status: 3}, /"status" must be an object of outbox status's settings/],
    ['out of range', {relay: {batch: 0}}, /^outbox: relay\.batch \(outbox\.config\.json\) must be between 1 and 10000/],
    ['wrong type', {relay: {once: 'yes'}}, /^outbox: relay\.once \(outbox\.config\.json\) must be true or false/],
    ['not one of the options', {relay: {publisher: 'kafka'}}, /^outbox: relay\.publisher \(outbox\.config\.json\) must be one of: stdout, http, amqp, nats, redis/],
    ['a bad duration', {relay: {lease: 'forever'}}, /^outbox: relay\.lease \(outbox\.config\.json\)/],
  ]
  for (const [name, content, expected] of cases) {
    it(name, () => {
      withFile(content)
      // a URL nothing listens on: the file must be refused before any connection is tried
      const r = cli(['relay', '--publisher', 'stdout', '--once', '--url', 'postgres://postgres@127.0.0.1:1/none'], {cwd: dir, env: CLEAN})
      expect(r.status).toBe(2)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr).toMatch(expected)
    })
  }
})

describe('every command reads the file', () => {
  it('the file fills a required flag (relay --publisher, archive --before)', () => {
    withFile({relay: {publisher: 'stdout'}, archive: {before: '30d'}})
    expect(settingsOf(['relay']).publisher).toMatchObject({value: 'stdout', source: 'file'})
    expect(settingsOf(['archive']).before).toMatchObject({value: '30d', source: 'file'})
  })

  it('each command with a table takes the top-level table name', () => {
    withFile({table: 'shared_outbox'})
    const ids = Object.values(manifest.commands).filter((c) => !c.hidden && c.flags.table).map((c) => c.id.split(':'))
    expect(ids.length).toBeGreaterThan(8)
    for (const id of ids) expect(settingsOf(id).table, id.join(' ')).toMatchObject({value: 'shared_outbox', source: 'file'})
  })

  it('status, relay --once and replay run from the file alone (SQLite)', () => {
    const db = `sqlite:${join(dir, 'app.db')}`
    withFile({url: db, table: 'app_outbox', relay: {publisher: 'stdout', once: true}, replay: {since: '1h', dryRun: true}})
    expect(cli(['init', '--apply'], {cwd: dir, env: CLEAN}).status).toBe(0)
    const status = cli(['status', '--json'], {cwd: dir, env: {...CLEAN, DATABASE_URL: 'sqlite:/nonexistent/elsewhere.db'}})
    expect(status.stderr).toBe('')
    expect(status.status).toBe(0)
    expect(JSON.parse(status.stdout)).toMatchObject({pending: 0})
    const relay = cli(['relay', '--quiet'], {cwd: dir, env: CLEAN})
    expect(relay.status, relay.stderr).toBe(0)
    const replay = cli(['replay'], {cwd: dir, env: CLEAN})
    expect(replay.status, replay.stderr).toBe(0)
    expect(replay.stdout + replay.stderr).toMatch(/dry run/i)
  })
})

describe('outbox config itself', () => {
  it('refuses an unknown command and a bad flag of the command, exit 2', () => {
    withFile({})
    expect(cli(['config', 'relya'], {cwd: dir, env: CLEAN})).toMatchObject({status: 2, stderr: expect.stringMatching(/^outbox: unknown command "relya"\. Give one of: .*relay/)})
    expect(cli(['config', 'relay', '--batch', '0'], {cwd: dir, env: CLEAN})).toMatchObject({status: 2, stderr: expect.stringMatching(/^outbox: --batch must be between 1 and 10000/)})
    expect(cli(['config'], {cwd: dir, env: CLEAN}).status).toBe(2)
  })
  it('takes a command of a topic: failed show', () => {
    withFile({'failed show': {table: 'x_outbox'}})
    expect(settingsOf(['failed', 'show']).table).toMatchObject({value: 'x_outbox', source: 'file', from: 'failed show.table in outbox.config.json'})
  })
})

describe('schemas/config.schema.json', () => {
  const validate = new Ajv2020({strict: true, allowUnionTypes: true}).compile(schema)
  it('accepts a full file and refuses what the CLI refuses', () => {
    expect(validate({$schema: './schemas/config.schema.json', url: 'postgres://x@h/db', table: 't', relay: {publisher: 'amqp', batch: 50, once: true, header: ['A: b']}, 'failed show': {table: 't'}})).toBe(true)
    expect(validate({relay: {batchSize: 5}})).toBe(false)
    expect(validate({relay: {publisher: 'kafka'}})).toBe(false)
    expect(validate({urll: 'x'})).toBe(false)
  })
  it('has a section for every command and a key for each of its flags', () => {
    for (const command of Object.values(manifest.commands).filter((c) => !c.hidden && !['config', 'version'].includes(c.id))) {
      const section = schema.properties[command.id.replaceAll(':', ' ')]
      expect(section, command.id).toBeDefined()
      for (const flag of Object.keys(command.flags).filter((f) => !['config', 'json', 'help'].includes(f))) {
        expect(section.properties[flag.replace(/-([a-z0-9])/g, (_: string, c: string) => c.toUpperCase())], `${command.id} --${flag}`).toBeDefined()
      }
    }
  })
})

describe("README's example file", () => {
  it('is valid against the schema and read as written', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('### Configuration'))
    const example = /```json\n([\s\S]*?)```/.exec(section)?.[1]
    expect(example).toBeDefined()
    const file = JSON.parse(example!)
    const validate = new Ajv2020({strict: true, allowUnionTypes: true}).compile(schema)
    expect(validate({...file, $schema: undefined}), JSON.stringify(validate.errors)).toBe(true)
    withFile(example!)
    const s = settingsOf(['relay', '--once'], {DB_PASSWORD: 'db-pw', MQ_PASSWORD: 'mq-pw'})
    expect(s.url).toMatchObject({value: 'postgres://app:***@db/app', source: 'file'})
    expect(s.batch).toMatchObject({value: '200', source: 'file'})
    expect(s.once).toMatchObject({value: 'true', source: 'flag'})
  })
})
