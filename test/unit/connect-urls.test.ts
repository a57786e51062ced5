// Every URL form a user connects with, read without a server: sockets, libpq's sslmode rules,
// MySQL's ssl-mode, and the passwords they carry masked.
import {mkdirSync, mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {postgresTarget, pgTlsOptions} from '../../dialects/postgres/url.js'
import {mysqlTarget, mysqlTlsOptions} from '../../dialects/mysql/url.js'
import {redactSecrets, redactUrl} from '../../src/core/redact.js'
import {UsageError} from '../../src/core/errors.js'
import {tlsTries} from '../../src/db/transport.js'
import {parseNetworkUrl} from '../../src/db/url.js'

// a HOME without ~/.postgresql, so libpq's default files do not apply unless a test puts them there
const home = mkdtempSync(join(tmpdir(), 'outbox-home-'))
const env = {HOME: home}
const pem = (name: string) => {
  const path = join(home, name)
  writeFileSync(path, `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`)
  return path
}

/** the one line a UsageError says */
function refusal(parse: () => unknown): string {
  try {
    parse()
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError)
    return (error as UsageError).line()
  }
  throw new Error('not refused')
}

describe('network URLs split as libpq splits them', () => {
  it('takes an empty host, a percent-encoded socket path, IPv6, and an @ in the password', () => {
    expect(parseNetworkUrl('postgres:///db?host=/var/run/postgresql')).toMatchObject({host: '', database: 'db', params: new Map([['host', '/var/run/postgresql']])})
    expect(parseNetworkUrl('postgres://user@/db')).toMatchObject({user: 'user', host: '', database: 'db'})
    expect(parseNetworkUrl('postgresql://u@%2Fvar%2Frun%2Fpostgresql/db')).toMatchObject({host: '/var/run/postgresql', database: 'db'})
    expect(parseNetworkUrl('postgres://u:p@ss@[::1]:6543/db')).toMatchObject({user: 'u', password: 'p@ss', host: '::1', port: 6543})
  })
  it.each([
    ['postgres://a:1,b:2/db', /names several hosts/],
    ['postgres://u@[::1/db', /malformed database URL/],
    ['postgres://u@h:0/db', /port 0 is out of range/],
    ['postgres://u@h:5x/db', /malformed database URL.*the port is not a number/],
    ['postgres://u@h/d%zzb', /malformed database URL/],
    ['postgres:db', /malformed database URL/],
  ])('refuses %s in one line', (url, message) => {
    expect(refusal(() => parseNetworkUrl(url))).toMatch(message)
  })
})

describe('postgres URLs mean what they mean to libpq', () => {
  it('connects to a socket directory given by host=, by the host part, or by default', () => {
    expect(postgresTarget('postgres://postgres@/test?host=/var/run/postgresql', env)).toMatchObject({socket: true, where: '/var/run/postgresql/.s.PGSQL.5432', config: {host: '/var/run/postgresql', user: 'postgres', database: 'test'}})
    expect(postgresTarget('postgresql://%2Ftmp%2Fpg:6000/x', env)).toMatchObject({socket: true, where: '/tmp/pg/.s.PGSQL.6000'})
    expect(postgresTarget('postgres:///test', {...env, PGHOST: '/run/elsewhere'}).config.host).toBe('/run/elsewhere')
    // no host at all: the socket libpq builds use when it is there, else localhost
    const fallback = postgresTarget('postgres:///test?port=5999', env)
    expect(fallback).toMatchObject({socket: false, where: 'localhost:5999'})
  })
  it('reads dbname, user, password and port from the query, and passes other parameters to pg', () => {
    const target = postgresTarget('postgres://h/ignored?dbname=app&user=me&password=pw&port=6432&application_name=mine&options=-c%20search_path%3Dx', env)
    expect(target.config).toEqual({host: 'h', port: 6432, user: 'me', password: 'pw', database: 'app', application_name: 'mine', options: '-c search_path=x'})
  })
  it('defaults to sslmode=prefer: TLS tried first, then without; a socket never uses TLS', () => {
    const tcp = postgresTarget('postgres://postgres@127.0.0.1/test', env)
    expect(tcp.tls).toMatchObject({mode: 'prefer', verifyChain: false})
    expect(tlsTries(tcp, (tls) => pgTlsOptions(tls))).toMatchObject({first: {rejectUnauthorized: false}, second: false})
    expect(tlsTries(postgresTarget('postgres://postgres@/test?host=/tmp&sslmode=verify-full', env), () => 'tls')).toEqual({first: false})
    expect(tlsTries(postgresTarget('postgres://h/db?sslmode=allow', env), () => 'tls')).toEqual({first: false, second: 'tls'})
    expect(tlsTries(postgresTarget('postgres://h/db?sslmode=disable', env), () => 'tls')).toEqual({first: false})
    expect(postgresTarget('postgres://h/db', {...env, PGSSLMODE: 'require'}).tls.mode).toBe('require')
  })
  it('require encrypts without verifying; verify-ca checks the chain only; verify-full the name too', () => {
    const ca = pem('ca.crt')
    const require = pgTlsOptions(postgresTarget('postgres://h/db?sslmode=require', env).tls)
    expect(require).toMatchObject({rejectUnauthorized: false})
    const verifyCa = pgTlsOptions(postgresTarget(`postgres://h/db?sslmode=verify-ca&sslrootcert=${ca}`, env).tls)
    expect(verifyCa).toMatchObject({rejectUnauthorized: true, ca: expect.stringContaining('ca.crt')})
    expect((verifyCa.checkServerIdentity as () => unknown)()).toBeUndefined()
    const verifyFull = pgTlsOptions(postgresTarget(`postgres://h/db?sslmode=verify-full&sslrootcert=${ca}`, env).tls)
    expect(verifyFull).toMatchObject({rejectUnauthorized: true})
    expect(verifyFull).not.toHaveProperty('checkServerIdentity')
    // libpq: with a root certificate, require checks the chain as verify-ca does
    expect(pgTlsOptions(postgresTarget(`postgres://h/db?sslmode=require&sslrootcert=${ca}`, env).tls)).toMatchObject({rejectUnauthorized: true})
  })
  it('verify-full with hostaddr dials the address and checks the certificate for the host name', () => {
    const target = postgresTarget(`postgres://u@db.example.com/app?hostaddr=10.1.2.3&sslmode=verify-full&sslrootcert=${pem('ca2.crt')}`, env)
    expect(target.config.host).toBe('10.1.2.3')
    expect(target.where).toBe('db.example.com (10.1.2.3):5432')
    expect(pgTlsOptions(target.tls, target.servername)).toMatchObject({servername: 'db.example.com', rejectUnauthorized: true})
  })
  it('reads pg\'s own ssl=true / ssl=no-verify as verify-full against the system\'s CAs / require', () => {
    const legacy = postgresTarget('postgres://h/db?ssl=true', env).tls
    expect(legacy).toMatchObject({mode: 'verify-full', caSource: "the system's CAs"})
    expect(legacy.ca).toBeUndefined()
    expect(postgresTarget('postgres://h/db?ssl=no-verify', env).tls.mode).toBe('require')
    expect(postgresTarget('postgres://h/db?sslrootcert=system', env).tls.mode).toBe('verify-full')
  })
  it('takes ~/.postgresql/root.crt and the client certificate there, as libpq does', () => {
    const other = mkdtempSync(join(tmpdir(), 'outbox-home-'))
    const dir = join(other, '.postgresql')
    mkdirSync(dir)
    for (const file of ['root.crt', 'postgresql.crt', 'postgresql.key']) writeFileSync(join(dir, file), file)
    const tls = postgresTarget('postgres://h/db?sslmode=verify-ca', {HOME: other}).tls
    expect(tls).toMatchObject({ca: 'root.crt', cert: 'postgresql.crt', key: 'postgresql.key', verifyChain: true})
    expect(postgresTarget('postgres://h/db', {HOME: other}).tls.verifyChain).toBe(true)
  })
  it.each([
    ['postgres://h/db?sslmode=verify-ca', /sslmode=verify-ca needs the CA that signed the server's certificate/],
    ['postgres://h/db?sslmode=verify-full', /sslmode=verify-full needs the CA/],
    ['postgres://h/db?sslmode=required', /sslmode=required is not an sslmode. Use one of: disable, allow, prefer, require, verify-ca, verify-full/],
    ['postgres://h/db?sslmode=require&sslrootcert=/nonexistent/ca.crt', /cannot read the sslrootcert file \/nonexistent\/ca.crt \(ENOENT\)/],
    ['postgres://h/db?sslmode=verify-ca&sslrootcert=system', /sslrootcert=system needs sslmode=verify-full, not sslmode=verify-ca/],
    ['postgres://h/db?sslcert=/tmp/c.crt', /sslcert and sslkey go together/],
  ])('refuses %s before connecting', (url, message) => {
    expect(refusal(() => postgresTarget(url, env))).toMatch(message)
  })
})

describe('mysql URLs: sockets and the MySQL client\'s ssl-mode', () => {
  it('connects to a socket by socket=, socketPath= or a percent-encoded host', () => {
    for (const url of ['mysql://root@localhost/test?socketPath=/run/mysqld/mysqld.sock', 'mariadb://root@/test?socket=/run/mysqld/mysqld.sock', 'mysql://root@%2Frun%2Fmysqld%2Fmysqld.sock/test']) {
      expect(mysqlTarget(url), url).toMatchObject({socket: true, where: '/run/mysqld/mysqld.sock', config: {socketPath: '/run/mysqld/mysqld.sock', user: 'root', database: 'test'}})
      expect(mysqlTarget(url).config).not.toHaveProperty('host')
    }
    expect(mysqlTarget('mysql:///test')).toMatchObject({socket: false, where: 'localhost:3306'})
  })
  it('maps ssl-mode (MySQL\'s names or libpq\'s) onto mysql2\'s options; PREFERRED by default', () => {
    const options = (url: string) => mysqlTlsOptions(mysqlTarget(url))
    expect(mysqlTarget('mysql://h/db').tls.mode).toBe('prefer')
    expect(tlsTries(mysqlTarget('mysql://h/db'), () => 'tls')).toEqual({first: 'tls', second: false})
    expect(options('mysql://h/db?ssl-mode=REQUIRED')).toMatchObject({rejectUnauthorized: false, verifyIdentity: false})
    // MySQL's REQUIRED does not verify even given a CA (libpq's require would)
    expect(options(`mysql://h/db?ssl-mode=required&ssl-ca=${pem('my-ca.crt')}`)).toMatchObject({rejectUnauthorized: false, ca: expect.stringContaining('my-ca')})
    expect(options('mysql://h/db?ssl-mode=VERIFY_CA')).toMatchObject({rejectUnauthorized: true, verifyIdentity: false})
    expect(options(`mysql://h/db?sslmode=verify-full&sslrootcert=${pem('my-ca2.crt')}`)).toMatchObject({rejectUnauthorized: true, verifyIdentity: true})
    expect(mysqlTarget('mysql://h/db?ssl=true').tls.mode).toBe('verify-full')
    expect(tlsTries(mysqlTarget('mysql://h/db?ssl=false'), () => 'tls')).toEqual({first: false})
    expect(tlsTries(mysqlTarget('mysql://h/db?ssl-mode=REQUIRED&socket=/tmp/s'), () => 'tls')).toEqual({first: false})
  })
  it('passes mysql2\'s own ssl={...} object as it is', () => {
    const target = mysqlTarget('mysql://h/db?ssl=%7B%22rejectUnauthorized%22%3Afalse%7D')
    expect(mysqlTlsOptions(target)).toEqual({rejectUnauthorized: false})
    expect(target.tls.mode).toBe('require')
    expect(mysqlTarget('mysql://h/db?ssl={"verifyIdentity":true}').tls.mode).toBe('verify-full')
  })
  it.each([
    ['mysql://h/db?ssl-mode=bogus', /ssl-mode=bogus is not a MySQL ssl-mode. Use one of: DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY/],
    ['mysql://h/db?ssl-mode=allow', /ssl-mode=allow is not a MySQL ssl-mode/],
    ['mysql://h/db?ssl=yes', /ssl=yes is neither true, false nor a JSON object/],
    ['mysql://h/db?ssl={oops', /ssl= is not a JSON object/],
    ['mysql://h/db?ssl=true&ssl-mode=REQUIRED', /both ssl-mode= and ssl=/],
    ['mysql://h/db?ssl-mode=VERIFY_CA&ssl-ca=/nonexistent/ca.pem', /cannot read the ssl-ca file \/nonexistent\/ca.pem \(ENOENT\)/],
    ['mysql://h/db?ssl-cert=/tmp/c.pem', /ssl-cert and ssl-key go together/],
  ])('refuses %s before connecting', (url, message) => {
    expect(refusal(() => mysqlTarget(url))).toMatch(message)
  })
})

describe('passwords masked in socket and TLS URLs', () => {
  it.each([
    ['postgres://u:sockpw1@/db?host=/var/run/postgresql', 'postgres://u:***@/db?host=/var/run/postgresql', 'sockpw1'],
    ['postgres://:sockpw2@/db', 'postgres://:***@/db', 'sockpw2'],
    ['postgresql://u:sockpw3@%2Fvar%2Frun%2Fpostgresql/db', 'postgresql://u:***@%2Fvar%2Frun%2Fpostgresql/db', 'sockpw3'],
    ['mysql://root:sockpw4@localhost/test?socketPath=/run/mysqld/mysqld.sock', 'mysql://root:***@localhost/test?socketPath=/run/mysqld/mysqld.sock', 'sockpw4'],
    ['postgres://h/db?sslmode=verify-full&sslkey=k.pem&sslpassword=keypw5', 'postgres://h/db?sslmode=verify-full&sslkey=k.pem&sslpassword=***', 'keypw5'],
    ['mysql://h/db?ssl={"passphrase":"keypw6"}', 'mysql://h/db?ssl={"passphrase":"***"}', 'keypw6'],
    ['mysql://h/db?ssl=%7B%22passphrase%22%3A%22keypw7%22%7D', 'mysql://h/db?ssl=%7B%22passphrase%22%3A%22***%22%7D', 'keypw7'],
  ])('%s', (url, masked, secret) => {
    expect(redactUrl(url)).toBe(masked)
    expect(redactSecrets(`failed (${secret}) at ${url}`, url)).not.toContain(secret)
  })
})
