// The drivers and broker clients are optional peer dependencies. An install without one (here:
// the built CLI copied beside a node_modules that lacks them) still prints SQL, and a URL that
// needs a missing driver says which package to install, in one line, exit 2.
import {spawnSync} from 'node:child_process'
import {cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

const root = new URL('../..', import.meta.url).pathname
const MISSING = ['pg', 'mysql2', 'better-sqlite3', 'amqplib', 'nats', 'redis', '@redis']
let app: string

beforeAll(() => {
  app = mkdtempSync(join(tmpdir(), 'outbox-no-drivers-'))
  // copies, not links: node resolves a package from a module's real path
  for (const part of ['bin', 'dist', 'package.json', 'oclif.manifest.json']) cpSync(join(root, part), join(app, part), {recursive: true})
  mkdirSync(join(app, 'node_modules'))
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (!MISSING.includes(name) && !name.startsWith('.')) symlinkSync(join(root, 'node_modules', name), join(app, 'node_modules', name))
  }
})
afterAll(() => rmSync(app, {recursive: true, force: true}))

function run(args: string[]) {
  const r = spawnSync(process.execPath, [join(app, 'bin/run.js'), ...args], {encoding: 'utf8', cwd: app, env: {...process.env, NO_COLOR: '1', OUTBOX_DATABASE_URL: '', DATABASE_URL: ''}})
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
