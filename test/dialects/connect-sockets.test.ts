// Unix-socket URLs on the real servers, everywhere a URL is taken: openDb, the CLI's --url,
// OUTBOX_DATABASE_URL and the config file, verify, and chaos's worker processes. And MySQL's
// ssl-mode against a MariaDB without TLS (it cannot be turned on without a restart): the clear
// error for REQUIRED, and PREFERRED (the default) falling back to plain.
import {existsSync, mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {execFileSync} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {sql} from '../../dialects/index.js'
import {ConnectionError} from '../../src/core/errors.js'
import {openDb, type Db} from '../../src/db/index.js'
import {verify} from '../../src/verify/run.js'
import {cli} from '../helpers/cli.js'
import {dropTables, targets, uniqueTables} from '../helpers/targets.js'

const PG_SOCKET_DIR = '/var/run/postgresql'
const mysqlSocket = (() => {
  try {
    return execFileSync('mariadb', ['-uroot', '-N', '-e', 'select @@socket'], {encoding: 'utf8'}).trim()
  } catch {
    return ''
  }
})()

const [pg, my] = await targets(['postgres', 'mysql'])
const SOCKETS = {
  postgres: {
    available: pg.available && existsSync(join(PG_SOCKET_DIR, '.s.PGSQL.5432')),
    urls: [`postgres://postgres@/test?host=${PG_SOCKET_DIR}`, `postgres:///test?host=${PG_SOCKET_DIR}&user=postgres`, 'postgresql://postgres@%2Fvar%2Frun%2Fpostgresql/test'],
    // a socket connection has no client address
    viaSocket: async (db: Db) => (await db.query<{addr: string | null}>(sql`SELECT inet_client_addr() AS addr`))[0].addr === null,
  },
  mysql: {
    available: my.available && mysqlSocket !== '' && existsSync(mysqlSocket),
    urls: [`mysql://root@localhost/test?socketPath=${mysqlSocket}`, `mariadb://root@/test?socket=${mysqlSocket}`, `mysql://root@${encodeURIComponent(mysqlSocket)}/test`],
    // the server names a socket client 'localhost', a TCP one host:port
    viaSocket: async (db: Db) => (await db.query<{host: string}>(sql`SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()`))[0].host === 'localhost',
  },
}

for (const [dialect, s] of Object.entries(SOCKETS)) {
  describe.skipIf(!s.available)(`${dialect} over its Unix socket`, () => {
    const names = uniqueTables(`sock_${dialect.slice(0, 2)}`)
    const url = s.urls[0]

    afterAll(async () => {
      const db = await openDb(url)
      await dropTables(db, names)
      await db.close()
    })

    it.each(s.urls)('openDb connects by %s', async (socketUrl) => {
      const db = await openDb(socketUrl, {poolSize: 1})
      try {
        expect(await s.viaSocket(db)).toBe(true)
        expect(await db.transaction((tx) => tx.query(sql`SELECT 1 AS one`))).toEqual([{one: 1}])
      } finally {
        await db.close()
      }
    })

    it('the CLI takes it from --url, OUTBOX_DATABASE_URL and the config file', () => {
      // this file's process only: the children see no URL but the one each step gives
      delete process.env.OUTBOX_DATABASE_URL
      delete process.env.DATABASE_URL
      const tables = ['--table', names.outbox, '--inbox-table', names.inbox, '--archive-table', names.archive]
      const init = cli(['init', '--apply', '--url', url, ...tables])
      expect(init.status, init.stderr).toBe(0)
      const byFlag = cli(['status', '--url', url, '--json', ...tables])
      expect(byFlag.status, byFlag.stderr).toBe(0)
      expect(JSON.parse(byFlag.stdout)).toMatchObject({pending: 0})
      const byEnv = cli(['status', '--json', ...tables], {env: {OUTBOX_DATABASE_URL: url}})
      expect(byEnv.status, byEnv.stderr).toBe(0)
      const config = join(mkdtempSync(join(tmpdir(), 'outbox-sock-')), 'outbox.config.json')
      writeFileSync(config, JSON.stringify({url, table: names.outbox, inboxTable: names.inbox, archiveTable: names.archive}))
      const byFile = cli(['status', '--config', config, '--json'])
      expect(byFile.status, byFile.stderr).toBe(0)
    })

    it('verify runs over it, second session included', async () => {
      const report = await verify(url, {events: 50, only: ['server', 'second-session']})
      expect(report.checks.map((c) => [c.check, c.status])).toEqual([
        ['server', 'pass'],
        ['second-session', 'pass'],
      ])
    })

    it('a socket that is not there is one line, exit 2', () => {
      const missing = dialect === 'postgres' ? 'postgres://postgres@/test?host=/nonexistent-dir' : 'mysql://root@localhost/test?socket=/nonexistent-dir/mysqld.sock'
      const r = cli(['status', '--url', missing])
      expect(r.status).toBe(2)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr).toMatch(/no database server listening on the socket \/nonexistent-dir\/(\.s\.PGSQL\.5432|mysqld\.sock) \(ENOENT\)\. Check the socket path in --url/)
    })
  })
}

describe.skipIf(!SOCKETS.postgres.available)('chaos workers reconnect by a socket URL', () => {
  it('a kill run on PostgreSQL over the socket finds nothing lost or duplicated', () => {
    const r = cli(['chaos', '--url', SOCKETS.postgres.urls[0], '--steps', 'relay.after-send', '--scenarios', 'none', '--json', '--seed', '5'])
    expect(r.status, r.stderr).toBe(0)
    const report = JSON.parse(r.stdout) as {ok: boolean; dialect: string}
    expect(report).toMatchObject({ok: true, dialect: 'postgres'})
  })
})

describe.skipIf(!my.available)('MySQL ssl-mode against a MariaDB without TLS', () => {
  let tlsOff = false
  beforeAll(async () => {
    const db = await openDb(my.url, {poolSize: 1})
    tlsOff = (await db.query<{v: string}>(sql`SELECT @@have_ssl AS v`))[0].v !== 'YES'
    await db.close()
  })

  it('PREFERRED (the default) falls back to a plain connection, also with a pool of one', async (ctx) => {
    if (!tlsOff) ctx.skip()
    const db = await openDb(my.url, {poolSize: 1})
    try {
      const [cipher] = await db.query<{Value: string}>(sql`SHOW SESSION STATUS LIKE 'Ssl_cipher'`)
      expect(cipher.Value).toBe('')
      await Promise.all([1, 2, 3].map(() => db.transaction((tx) => tx.query(sql`SELECT 1`))))
    } finally {
      await db.close()
    }
  })

  it.each([
    ['ssl-mode=REQUIRED', /^ssl-mode=REQUIRED: the server at 127\.0\.0\.1:3306 offers no TLS\. Turn TLS on in the server, or use ssl-mode=PREFERRED \(TLS when offered\) or ssl-mode=DISABLED$/],
    ['sslmode=verify-full', /^ssl-mode=VERIFY_IDENTITY: the server at 127\.0\.0\.1:3306 offers no TLS/],
    ['ssl=true', /^ssl-mode=VERIFY_IDENTITY: the server at 127\.0\.0\.1:3306 offers no TLS/],
    ['ssl=%7B%22rejectUnauthorized%22%3Afalse%7D', /^ssl-mode=REQUIRED: the server at 127\.0\.0\.1:3306 offers no TLS/],
  ])('%s is refused in one line when the server offers none', async (query, line) => {
    if (!tlsOff) return
    const url = `${my.url}?${query}`
    const error = await openDb(url, {poolSize: 1}).then(
      (db) => db.close(),
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(ConnectionError)
    expect((error as ConnectionError).line()).toMatch(line)
    const r = cli(['status', '--url', url])
    expect(r.status).toBe(2)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
  })

  it('REQUIRED over the socket connects without TLS (sockets are local, as with libpq)', async (ctx) => {
    if (!SOCKETS.mysql.available) ctx.skip()
    const db = await openDb(`${SOCKETS.mysql.urls[0]}&ssl-mode=REQUIRED`, {poolSize: 1})
    expect(await SOCKETS.mysql.viaSocket(db)).toBe(true)
    await db.close()
  })
})
