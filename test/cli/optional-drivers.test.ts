// The drivers and broker clients are optional peer dependencies. An install without one (here:
// the built CLI copied beside a node_modules that lacks them) still prints SQL, and a URL that
// needs a missing driver says which package to install, in one line, exit 2. Without
// @opentelemetry/api the library and the CLI work as before, and store nothing more.
import {spawnSync} from 'node:child_process'
import {cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

const root = new URL('../..', import.meta.url).pathname
const BROKER_CLIENTS = ['amqplib', 'nats', 'redis', '@redis']
const DRIVERS = ['pg', 'mysql2', 'better-sqlite3']
let app: string
let noBrokers: string
let noTracing: string

/** The built CLI copied beside a node_modules of links to ours, less the packages `missing`. */
function install(missing: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-optional-'))
  // copies, not links: node resolves a package from a module's real path
  for (const part of ['bin', 'dist', 'package.json', 'oclif.manifest.json']) cpSync(join(root, part), join(dir, part), {recursive: true})
  mkdirSync(join(dir, 'node_modules'))
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (!missing.includes(name) && !name.startsWith('.')) symlinkSync(join(root, 'node_modules', name), join(dir, 'node_modules', name))
  }
  return dir
}

beforeAll(() => {
  app = install([...DRIVERS, ...BROKER_CLIENTS])
  noBrokers = install(BROKER_CLIENTS)
  noTracing = install(['@opentelemetry'])
})
afterAll(() => {
  for (const dir of [app, noBrokers, noTracing]) rmSync(dir, {recursive: true, force: true})
})

function run(args: string[], dir = app) {
  const r = spawnSync(process.execPath, [join(dir, 'bin/run.js'), ...args], {encoding: 'utf8', cwd: dir, env: {...process.env, NO_COLOR: '1', OUTBOX_DATABASE_URL: '', DATABASE_URL: '', OUTBOX_TARGET: ''}})
  return {status: r.status, stdout: r.stdout, stderr: r.stderr}
}

describe('an install without the drivers', () => {
  it('prints SQL: init and sql need no driver', () => {
    expect(run(['init', '--dialect', 'postgres']).status).toBe(0)
    expect(run(['sql', 'claim', '--dialect', 'mysql']).status).toBe(0)
  })

  for (const [url, pkg, what] of [
    ['postgres://postgres@127.0.0.1:5432/test', 'pg', 'a postgres:// URL'],
    ['mysql://root@127.0.0.1:3306/test', 'mysql2', 'a mysql:// or mariadb:// URL'],
    ['sqlite::memory:', 'better-sqlite3', 'a sqlite: URL'],
  ]) {
    it(`names ${pkg} when ${what} needs it`, () => {
      const r = run(['status', '--url', url])
      expect(r.status).toBe(2)
      expect(r.stderr).toBe(`outbox: ${what} needs the ${pkg} package, which is not installed. Install it next to outbox: npm install ${pkg}\n`)
    })
  }
})

describe('an install without the broker clients', () => {
  for (const [publisher, target, pkg, what] of [
    ['amqp', 'amqp://127.0.0.1:5672', 'amqplib', 'an amqp:// broker'],
    ['nats', 'nats://127.0.0.1:4222', 'nats', 'a nats:// broker'],
    ['redis', 'redis://127.0.0.1:6379', 'redis', 'a redis:// broker'],
  ]) {
    it(`relay --publisher ${publisher} names ${pkg}`, () => {
      const url = `sqlite:${join(noBrokers, `${publisher}.db`)}`
      expect(run(['init', '--apply', '--url', url], noBrokers).status).toBe(0)
      const r = run(['relay', '--url', url, '--publisher', publisher, '--target', target, '--once'], noBrokers)
      expect(r.status).toBe(2)
      expect(r.stderr).toBe(`outbox: ${what} needs the ${pkg} package, which is not installed. Install it next to outbox: npm install ${pkg}\n`)
    })
  }
})

// writeEventSync, then Consumer.handle of an event that carries a traceparent: the library's
// traced paths, run where @opentelemetry/api is not installed
const LIBRARY_RUN = `
import Database from 'better-sqlite3'
const o = await import('./dist/src/index.js')
const [file] = process.argv.slice(2)
const db = await o.openDb('sqlite:' + file)
await o.applyInit(db, o.DEFAULT_TABLES, {inbox: true, archive: false})
const database = new Database(file)
const event = {eventType: 'order.created', aggregateId: 'o-1', payload: {}, headers: {tenant: 't1'}}
const id = database.transaction(() => o.writeEventSync(database, event))()
database.close()
const consumer = new o.Consumer(db, {consumer: 'billing'})
const outcome = await consumer.handle({id, headers: {traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'}}, async () => {})
await db.close()
console.log(JSON.stringify({outcome}))
`

describe('an install without @opentelemetry/api', () => {
  it('writes, relays and consumes as before, and stores only the headers given', () => {
    const file = join(noTracing, 'traced.db')
    const script = join(noTracing, 'library-run.mjs')
    writeFileSync(script, LIBRARY_RUN)
    const lib = spawnSync(process.execPath, [script, file], {encoding: 'utf8', cwd: noTracing})
    expect(lib.stderr).toBe('')
    expect(JSON.parse(lib.stdout)).toEqual({outcome: 'applied'})
    const r = run(['relay', '--url', `sqlite:${file}`, '--publisher', 'stdout', '--once'], noTracing)
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout.trim()).headers).toEqual({tenant: 't1'})
  })
})
