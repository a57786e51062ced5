// postgres:// and postgresql:// URLs read as libpq reads them: a host or a Unix-socket directory,
// and sslmode with its certificate files. node-postgres reads sslmode its own way (`require`
// verifies like verify-full unless uselibpqcompat=true, and there is no prefer fallback), so pg
// is given the pieces and the TLS options, never the string.
import {existsSync} from 'node:fs'
import {homedir} from 'node:os'
import {isIP} from 'node:net'
import {join} from 'node:path'
import {UsageError} from '../../src/core/errors.js'
import {TLS_MODES, type Route, type TlsMode, type TlsSettings} from '../../src/db/transport.js'
import {parseNetworkUrl, readUrlFile, urlPort} from '../../src/db/url.js'

/** pg's connection fields (TLS apart), and where they lead. */
export interface PostgresTarget extends Route {
  config: {host: string; port: number; user?: string; password?: string; database?: string; [param: string]: unknown}
  /** the name verify-full checks the certificate for, when the address dialled is another (hostaddr) */
  servername?: string
}

// the parameters read here; every other one goes to pg as it is (application_name, options, ...)
const OURS = new Set(['host', 'hostaddr', 'port', 'dbname', 'user', 'password', 'sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'sslpassword', 'ssl', 'uselibpqcompat'])
// where libpq builds put the socket when the URL names no host: distribution packages, upstream
const SOCKET_DIRS = ['/var/run/postgresql', '/tmp']

export function postgresTarget(url: string, env: NodeJS.ProcessEnv = process.env): PostgresTarget {
  const parsed = parseNetworkUrl(url)
  const param = (name: string) => parsed.params.get(name) || undefined
  const port = param('port') ? urlPort(param('port')!, url) : parsed.port ?? (env.PGPORT ? urlPort(env.PGPORT, url) : 5432)
  const named = param('host') ?? (parsed.host || env.PGHOST)
  const host = named ?? SOCKET_DIRS.find((dir) => existsSync(join(dir, `.s.PGSQL.${port}`))) ?? 'localhost'
  const socket = host.startsWith('/')
  // hostaddr: the address to dial; host stays the name the certificate must carry (verify-full)
  const hostaddr = socket ? undefined : param('hostaddr')
  const config: PostgresTarget['config'] = {host: hostaddr ?? host, port}
  for (const [name, value] of parsed.params) if (!OURS.has(name)) config[name] = value
  const user = param('user') ?? parsed.user
  const password = param('password') ?? parsed.password
  const database = param('dbname') ?? parsed.database
  if (user) config.user = user
  if (password) config.password = password
  if (database) config.database = database
  const where = socket ? join(host, `.s.PGSQL.${port}`) : `${hostaddr ? `${host} (${hostaddr})` : host}:${port}`
  const servername = hostaddr && !isIP(host) ? host : undefined
  return {config, where, socket, servername, tls: tlsSettings(parsed.params, env, socket)}
}

const spell = (mode: TlsMode) => `sslmode=${mode}`

/**
 * libpq's rules: sslmode from the URL, else PGSSLMODE, else prefer; a root certificate from
 * sslrootcert, else PGSSLROOTCERT, else ~/.postgresql/root.crt when it exists (and with one,
 * require and prefer check the chain too); sslrootcert=system means the system's CAs and
 * verify-full. Nothing is read for a socket, where libpq ignores sslmode.
 */
function tlsSettings(params: Map<string, string>, env: NodeJS.ProcessEnv, socket: boolean): TlsSettings {
  const given = (name: string, envName: string) => params.get(name) || env[envName] || undefined
  const legacy = params.get('sslmode') ? undefined : pgSslParam(params.get('ssl'))
  // pg's ssl=true checked against Node's CAs: that is sslrootcert=system
  const rootcert = given('sslrootcert', 'PGSSLROOTCERT') ?? (legacy === 'verify-full' ? 'system' : undefined)
  const mode = sslMode(params.get('sslmode') || legacy || env.PGSSLMODE || (rootcert === 'system' ? 'verify-full' : 'prefer'))
  const settings: TlsSettings = {mode, spell, caParam: 'sslrootcert', caSource: "the system's CAs", verifyChain: false, verifyHost: mode === 'verify-full'}
  if (socket || mode === 'disable') return settings
  const home = (file: string) => {
    const path = join(env.HOME ?? homedir(), '.postgresql', file)
    return existsSync(path) ? path : undefined
  }
  if (rootcert === 'system') {
    if (mode !== 'verify-full') throw new UsageError(`sslrootcert=system needs sslmode=verify-full, not ${spell(mode)}`, 'A public CA signs certificates for anyone\'s host names: only verify-full makes it mean something')
  } else {
    const caFile = rootcert ?? home('root.crt')
    if (caFile) Object.assign(settings, {ca: readUrlFile('sslrootcert', caFile), caSource: `the CA in ${caFile}`})
    else if (mode === 'verify-ca' || mode === 'verify-full') {
      throw new UsageError(`${spell(mode)} needs the CA that signed the server's certificate`, 'Pass sslrootcert=PATH (or put it in ~/.postgresql/root.crt), or sslrootcert=system with verify-full for a public CA')
    }
  }
  settings.verifyChain = mode === 'verify-ca' || mode === 'verify-full' || settings.ca !== undefined
  // a client certificate: both files, named or in ~/.postgresql/
  const certFile = given('sslcert', 'PGSSLCERT') ?? home('postgresql.crt')
  const keyFile = given('sslkey', 'PGSSLKEY') ?? home('postgresql.key')
  if (certFile && keyFile) Object.assign(settings, {cert: readUrlFile('sslcert', certFile), key: readUrlFile('sslkey', keyFile)})
  else if (params.has('sslcert') || params.has('sslkey')) throw new UsageError('sslcert and sslkey go together', 'Pass both: the client certificate and its private key')
  settings.passphrase = params.get('sslpassword') || undefined
  return settings
}

function sslMode(text: string): TlsMode {
  // pg's own no-verify (PGSSLMODE=no-verify, ssl=no-verify) is libpq's require
  const mode = text === 'no-verify' ? 'require' : text
  if ((TLS_MODES as readonly string[]).includes(mode)) return mode as TlsMode
  throw new UsageError(`sslmode=${text} is not an sslmode`, `Use one of: ${TLS_MODES.join(', ')}`)
}

/** pg's own `ssl=` parameter, as the sslmode it amounts to (ssl=true verified against the system's CAs). */
function pgSslParam(value: string | undefined): string | undefined {
  if (value === undefined) return undefined
  if (value === 'true' || value === '1') return 'verify-full'
  if (value === 'false' || value === '0') return 'disable'
  return value
}

/** pg's ssl option for these settings: Node's TLS options. */
export function pgTlsOptions(tls: TlsSettings, servername?: string): Record<string, unknown> {
  return {
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    passphrase: tls.passphrase,
    rejectUnauthorized: tls.verifyChain,
    // verify-ca: the chain, not the name; pg names the host it dials itself (not an IP: RFC 6066)
    ...(tls.verifyHost ? (servername ? {servername} : {}) : {checkServerIdentity: () => undefined}),
  }
}
