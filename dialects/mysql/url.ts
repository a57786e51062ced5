// mysql:// and mariadb:// URLs: TCP or a Unix socket (socket= / socketPath=, or a
// percent-encoded path as the host), and TLS in the MySQL client's words (ssl-mode=, ssl-ca=,
// ssl-cert=, ssl-key=), libpq's (sslmode=, sslrootcert=, ...) or mysql2's own ssl= object.
import {UsageError} from '../../src/core/errors.js'
import {TLS_MODES, type Route, type TlsMode, type TlsSettings} from '../../src/db/transport.js'
import {parseNetworkUrl, readUrlFile} from '../../src/db/url.js'

export interface MysqlTarget extends Route {
  config: {host?: string; port?: number; socketPath?: string; user: string; password: string; database?: string}
  /** ssl={...}: mysql2's ssl options as given, used instead of ones built from the mode */
  sslObject?: Record<string, unknown>
}

// the MySQL client's --ssl-mode names, in TLS_MODES' meanings (MySQL has no allow)
const MYSQL_MODES: Partial<Record<TlsMode, string>> = {
  disable: 'DISABLED',
  prefer: 'PREFERRED',
  require: 'REQUIRED',
  'verify-ca': 'VERIFY_CA',
  'verify-full': 'VERIFY_IDENTITY',
}
const spell = (mode: TlsMode) => `ssl-mode=${MYSQL_MODES[mode] ?? mode}`

export function mysqlTarget(url: string): MysqlTarget {
  const parsed = parseNetworkUrl(url)
  const param = (...names: string[]) => names.map((name) => parsed.params.get(name)).find(Boolean)
  const socketPath = param('socket', 'socketPath') ?? (parsed.host.startsWith('/') ? parsed.host : undefined)
  const config: MysqlTarget['config'] = {
    user: parsed.user ?? 'root',
    password: parsed.password ?? '',
    database: parsed.database,
    ...(socketPath ? {socketPath} : {host: parsed.host || 'localhost', port: parsed.port ?? 3306}),
  }
  const where = socketPath ?? `${config.host}:${config.port}`
  const {tls, sslObject} = tlsSettings(param)
  return {config, where, socket: socketPath !== undefined, tls, sslObject}
}

/**
 * The MySQL client's rules: ssl-mode, default PREFERRED; REQUIRED and PREFERRED encrypt without
 * checking the certificate even given a CA (unlike libpq's require); VERIFY_CA and
 * VERIFY_IDENTITY check it against ssl-ca, else Node's built-in CAs. ssl=true is
 * VERIFY_IDENTITY, ssl=false DISABLED.
 */
function tlsSettings(param: (...names: string[]) => string | undefined): {tls: TlsSettings; sslObject?: Record<string, unknown>} {
  const modeText = param('ssl-mode', 'sslmode')
  const ssl = param('ssl')
  if (modeText && ssl) throw new UsageError('the URL gives both ssl-mode= and ssl=', 'Give one: ssl-mode=REQUIRED, or mysql2\'s ssl={"rejectUnauthorized":false}')
  const sslObject = ssl?.startsWith('{') ? jsonObject(ssl) : undefined
  const mode = sslObject ? objectMode(sslObject) : modeText ? sslMode(modeText) : ssl ? booleanMode(ssl) : 'prefer'
  const caFile = param('ssl-ca', 'sslrootcert')
  const certFile = param('ssl-cert', 'sslcert')
  const keyFile = param('ssl-key', 'sslkey')
  const verifyChain = mode === 'verify-ca' || mode === 'verify-full'
  const tls: TlsSettings = {mode, spell, caParam: 'ssl-ca', caSource: "Node's built-in CAs", verifyChain, verifyHost: mode === 'verify-full'}
  if (mode === 'disable' || sslObject) return {tls, sslObject}
  if (caFile) Object.assign(tls, {ca: readUrlFile('ssl-ca', caFile), caSource: `the CA in ${caFile}`})
  if (Boolean(certFile) !== Boolean(keyFile)) throw new UsageError('ssl-cert and ssl-key go together', 'Pass both: the client certificate and its private key')
  if (certFile && keyFile) Object.assign(tls, {cert: readUrlFile('ssl-cert', certFile), key: readUrlFile('ssl-key', keyFile)})
  return {tls}
}

function sslMode(text: string): TlsMode {
  const wanted = text.toUpperCase().replace(/-/g, '_')
  for (const mode of TLS_MODES) if (MYSQL_MODES[mode] === wanted || (mode !== 'allow' && mode.toUpperCase().replace(/-/g, '_') === wanted)) return mode
  const names = Object.values(MYSQL_MODES).join(', ')
  throw new UsageError(`ssl-mode=${text} is not a MySQL ssl-mode`, `Use one of: ${names} (or libpq's disable, prefer, require, verify-ca, verify-full)`)
}

function booleanMode(text: string): TlsMode {
  if (text === 'true' || text === '1') return 'verify-full'
  if (text === 'false' || text === '0') return 'disable'
  throw new UsageError(`ssl=${text} is neither true, false nor a JSON object`, 'Use ssl-mode=REQUIRED (or another ssl-mode), ssl=true, or ssl={"rejectUnauthorized":false}')
}

function jsonObject(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {
    // the same answer as for an array
  }
  throw new UsageError('ssl= is not a JSON object', 'Percent-encode it if need be: ssl=%7B%22rejectUnauthorized%22%3Afalse%7D')
}

/** the mode mysql2 gives its ssl object: the chain checked unless rejectUnauthorized is false, the name only with verifyIdentity */
function objectMode(ssl: Record<string, unknown>): TlsMode {
  if (ssl.rejectUnauthorized === false) return 'require'
  return ssl.verifyIdentity === true ? 'verify-full' : 'verify-ca'
}

/** mysql2's ssl option for these settings. */
export function mysqlTlsOptions(target: MysqlTarget): Record<string, unknown> {
  if (target.sslObject) return target.sslObject
  const {tls} = target
  return {ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.verifyChain, verifyIdentity: tls.verifyHost}
}
