// sslmode with libpq's meanings against the local PostgreSQL, TLS turned on by this file: a
// private CA and a server certificate for a name that is not 127.0.0.1, `ALTER SYSTEM SET ssl`
// and a reload (no restart), every setting put back as found afterwards. Other files keep
// connecting meanwhile: pg_hba's host lines take TLS and plain alike, and it is not touched.
import {execFileSync} from 'node:child_process'
import {chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir, userInfo} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql} from '../../dialects/index.js'
import {ConnectionError, UsageError} from '../../src/core/errors.js'
import {openDb, type Db} from '../../src/db/index.js'
import {cli} from '../helpers/cli.js'
import {PG_URL, targets} from '../helpers/targets.js'

const [pg] = await targets(['postgres'])
const CERT_NAME = 'outbox-tls-test.invalid'
const TLS_SETTINGS = ['ssl', 'ssl_cert_file', 'ssl_key_file'] as const
const base = 'postgres://postgres@127.0.0.1:5432/test'
// a local server this process may reconfigure: root can hand the key to the postgres user
const local = pg.available && PG_URL.includes('127.0.0.1') && userInfo().uid === 0 && existsSync('/var/run/postgresql')

/** opens, reads whether this session is encrypted, closes; a failure comes back as the error */
async function tlsOf(url: string): Promise<boolean | unknown> {
  let db: Db | undefined
  try {
    db = await openDb(url, {poolSize: 1, connectTimeoutMs: 5000})
    const [row] = await db.query<{ssl: boolean | null}>(sql`SELECT (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()) AS ssl`)
    return row.ssl === true
  } catch (error) {
    return error
  } finally {
    await db?.close()
  }
}

function lineOf(error: unknown): string {
  expect(error).toBeInstanceOf(ConnectionError)
  return (error as ConnectionError).line()
}

describe.skipIf(!pg.available)('sslmode while the server has TLS off', () => {
  let sslOn = false
  beforeAll(async () => {
    const db = await openDb(PG_URL, {poolSize: 1})
    sslOn = (await db.query<{ssl: string}>(sql`SHOW ssl`))[0].ssl === 'on'
    await db.close()
  })

  it('require fails with one line naming the mode; the CLI exits 2', async (ctx) => {
    if (sslOn) ctx.skip()
    expect(lineOf(await tlsOf(`${base}?sslmode=require`))).toBe(
      'sslmode=require: the server at 127.0.0.1:5432 offers no TLS. Turn TLS on in the server, or use sslmode=prefer (TLS when offered) or sslmode=disable',
    )
    const r = cli(['status', '--url', `postgres://postgres:hunter22@127.0.0.1:5432/test?sslmode=require`])
    expect(r.status).toBe(2)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toMatch(/sslmode=require: the server at 127.0.0.1:5432 offers no TLS/)
    expect(r.stderr).not.toContain('hunter22')
  })

  it('prefer (the default) and disable connect without TLS', async (ctx) => {
    if (sslOn) ctx.skip()
    expect(await tlsOf(base)).toBe(false)
    expect(await tlsOf(`${base}?sslmode=prefer`)).toBe(false)
    expect(await tlsOf(`${base}?sslmode=disable`)).toBe(false)
  })
})

describe.skipIf(!local)('sslmode against a server with TLS on', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-tls-'))
  const file = (name: string) => join(dir, name)
  let admin: Db
  /** what ALTER SYSTEM held for each setting before (undefined: nothing, RESET puts that back) */
  const before = new Map<string, string | undefined>()

  const openssl = (...args: string[]) => execFileSync('openssl', args, {stdio: ['ignore', 'ignore', 'pipe']})
  function makeCa(name: string): void {
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
      '-keyout', file(`${name}.key`), '-out', file(`${name}.crt`))
  }

  /** waits until a new session sees ssl as wanted: the postmaster reloads on its own time */
  async function untilSsl(wanted: 'on' | 'off'): Promise<void> {
    for (let i = 0; i < 100; i++) {
      const db = await openDb(`${base}?sslmode=disable`, {poolSize: 1})
      const [{ssl}] = await db.query<{ssl: string}>(sql`SHOW ssl`)
      await db.close()
      if (ssl === wanted) return
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`ssl did not become ${wanted} after pg_reload_conf(): see the server's log`)
  }

  beforeAll(async () => {
    admin = await openDb(`${base}?sslmode=disable`, {poolSize: 1})
    // a private CA signs the server's certificate, for CERT_NAME only (no IP address in it)
    makeCa('ca')
    makeCa('other-ca')
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${CERT_NAME}`, '-keyout', file('server.key'), '-out', file('server.csr'))
    writeFileSync(file('server.ext'), `subjectAltName=DNS:${CERT_NAME}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`)
    openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', file('server.ext'), '-out', file('server.crt'))
    // the postgres user reads them: the directory open, the key its own and private (the server insists)
    chmodSync(dir, 0o755)
    chmodSync(file('server.crt'), 0o644)
    const postgresUser = Number(execFileSync('id', ['-u', 'postgres'], {encoding: 'utf8'}).trim())
    chownSync(file('server.key'), postgresUser, postgresUser)
    chmodSync(file('server.key'), 0o600)

    const held = await admin.query<{name: string; setting: string}>(
      sql`SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' AND name IN ('ssl', 'ssl_cert_file', 'ssl_key_file') ORDER BY seqno`,
    )
    for (const name of TLS_SETTINGS) before.set(name, held.filter((h) => h.name === name).pop()?.setting)
    await admin.execute(sql`${raw(`ALTER SYSTEM SET ssl_cert_file = '${file('server.crt')}'`)}`)
    await admin.execute(sql`${raw(`ALTER SYSTEM SET ssl_key_file = '${file('server.key')}'`)}`)
    await admin.execute(sql`ALTER SYSTEM SET ssl = on`)
    await admin.query(sql`SELECT pg_reload_conf()`)
    await untilSsl('on')
  })

  afterAll(async () => {
    if (!admin) return
    try {
      for (const name of TLS_SETTINGS) {
        const old = before.get(name)
        await admin.execute(sql`${raw(old === undefined ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} = '${old.replace(/'/g, "''")}'`)}`)
      }
      await admin.query(sql`SELECT pg_reload_conf()`)
      await untilSsl(before.get('ssl') === 'on' ? 'on' : 'off')
    } finally {
      await admin.close()
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('require encrypts against a certificate nobody here trusts, without verifying it', async () => {
    expect(await tlsOf(`${base}?sslmode=require`)).toBe(true)
  })

  it('prefer (the default) takes TLS when offered; disable does not', async () => {
    expect(await tlsOf(base)).toBe(true)
    expect(await tlsOf(`${base}?sslmode=disable`)).toBe(false)
  })

  it('verify-ca checks the chain against sslrootcert, not the name (127.0.0.1 is not in the certificate)', async () => {
    expect(await tlsOf(`${base}?sslmode=verify-ca&sslrootcert=${file('ca.crt')}`)).toBe(true)
  })

  it('verify-ca with the wrong CA fails in one line naming the mode and the CA', async () => {
    const line = lineOf(await tlsOf(`${base}?sslmode=verify-ca&sslrootcert=${file('other-ca.crt')}`))
    expect(line).toMatch(new RegExp(`^sslmode=verify-ca: the server's certificate at 127\\.0\\.0\\.1:5432 is not signed by the CA in ${file('other-ca.crt')} \\(.+\\)\\. Give the CA that signed it in sslrootcert=PATH, or use sslmode=require to encrypt without verifying$`))
  })

  it('require given a root certificate checks the chain, as libpq does', async () => {
    expect(await tlsOf(`${base}?sslmode=require&sslrootcert=${file('ca.crt')}`)).toBe(true)
    expect(lineOf(await tlsOf(`${base}?sslmode=require&sslrootcert=${file('other-ca.crt')}`))).toMatch(/^sslmode=require: the server's certificate .* is not signed by/)
  })

  it('verify-full to 127.0.0.1 fails in one line: the certificate names another host', async () => {
    const line = lineOf(await tlsOf(`${base}?sslmode=verify-full&sslrootcert=${file('ca.crt')}`))
    expect(line).toBe(
      `sslmode=verify-full: the server's certificate at 127.0.0.1:5432 is for DNS:${CERT_NAME}, not 127.0.0.1 (ERR_TLS_CERT_ALTNAME_INVALID). Connect by a name the certificate lists, or use sslmode=verify-ca to check the chain but not the name`,
    )
  })

  it('verify-full passes for the certificate\'s name, dialled at hostaddr=127.0.0.1', async () => {
    expect(await tlsOf(`postgres://postgres@${CERT_NAME}:5432/test?hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert=${file('ca.crt')}`)).toBe(true)
  })

  it('the CLI reports a failed verification in one line and exits 2', () => {
    const r = cli(['status', '--url', `${base}?sslmode=verify-full&sslrootcert=${file('ca.crt')}`])
    expect(r.status).toBe(2)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(r.stderr).toMatch(/sslmode=verify-full: the server's certificate at 127.0.0.1:5432 is for DNS:outbox-tls-test.invalid, not 127.0.0.1/)
  })

  it('a socket URL ignores sslmode, as libpq does', async () => {
    expect(await tlsOf(`postgres://postgres@/test?host=/var/run/postgresql&sslmode=verify-full&sslrootcert=${file('ca.crt')}`)).toBe(false)
  })

  it('a missing sslrootcert is refused before connecting', async () => {
    const error = await tlsOf(`${base}?sslmode=verify-ca&sslrootcert=${file('nope.crt')}`)
    expect(error).toBeInstanceOf(UsageError)
    expect((error as UsageError).line()).toMatch(/cannot read the sslrootcert file .*nope\.crt \(ENOENT\)/)
  })
})
