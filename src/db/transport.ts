// How a connection travels, shared by the network dialects: the TLS modes with libpq's meanings
// (each dialect maps its own URL words onto them, dialects/<d>/url.ts), the switch that prefer
// and allow make, and the one-line errors when TLS or a Unix socket fails.
import {ConnectionError} from '../core/errors.js'

/** libpq's sslmode values; MySQL's ssl-mode names map onto the same five (no allow). */
export const TLS_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const
export type TlsMode = (typeof TLS_MODES)[number]

export interface TlsSettings {
  mode: TlsMode
  /** the mode as the URL's dialect spells one, for messages: `sslmode=require`, `ssl-mode=VERIFY_CA` */
  spell(mode: TlsMode): string
  /** the URL parameter that names the CA file: `sslrootcert`, `ssl-ca` */
  caParam: string
  /** PEM of the CAs to trust; undefined: Node's built-in CAs */
  ca?: string
  /** where ca came from, for messages: a file, or the system's CAs */
  caSource: string
  cert?: string
  key?: string
  passphrase?: string
  /** the chain is checked against the CAs (verify-ca, verify-full; libpq also for require/prefer given a root certificate) */
  verifyChain: boolean
  /** the certificate must name the host (verify-full) */
  verifyHost: boolean
}

/** Where a connection goes. */
export interface Route {
  /** for messages: host:port, or the socket file */
  where: string
  /** a Unix socket: no TLS over it (libpq ignores sslmode there, and we do the same for MySQL) */
  socket: boolean
  tls: TlsSettings
}

/** What the driver's error says about the transport (each dialect reads its own driver's errors). */
export interface TransportSignals {
  /** the server answered the TLS request with no (PostgreSQL `N`, MySQL's handshake without the SSL flag) */
  noTlsOffered: boolean
  /** the server refused a connection without TLS (pg_hba hostssl; require_secure_transport) */
  plainRefused: boolean
}

/**
 * The TLS options of the first try and of the second, each `false` for none. prefer tries TLS,
 * then without; allow the other way round; every other mode has one way only.
 */
export function tlsTries<T>(route: Route, options: (tls: TlsSettings) => T): {first: T | false; second?: T | false} {
  const {mode} = route.tls
  if (route.socket || mode === 'disable') return {first: false}
  const tls = options(route.tls)
  if (mode === 'prefer') return {first: tls, second: false}
  if (mode === 'allow') return {first: false, second: tls}
  return {first: tls}
}

export type Connecting = <R>(fn: () => Promise<R>) => Promise<R>

/**
 * Wraps whatever may open a new connection. A failure becomes one line (transportFailure, else
 * the dialect's `other` words, else the driver's error). prefer / allow call `use` with their
 * second try's options once the server's answer calls for it, and run fn again: libpq decides
 * per connection, a pool once, then stays with it.
 */
export function connecting<T>(
  route: Route,
  tries: {second?: T | false},
  signals: (error: unknown) => TransportSignals,
  use: (options: T | false) => void,
  other: (error: unknown) => unknown = (error) => error,
): Connecting {
  const failure = (error: unknown) => transportFailure(error, route, signals(error)) ?? other(error)
  return async (fn) => {
    try {
      return await fn()
    } catch (error) {
      if (tries.second === undefined || !callsForSecondTry(route.tls.mode, error, signals(error))) throw failure(error)
      use(tries.second)
    }
    try {
      return await fn()
    } catch (error) {
      throw failure(error)
    }
  }
}

/** prefer / allow: this failure of the first try calls for the second. */
function callsForSecondTry(mode: TlsMode, error: unknown, signals: TransportSignals): boolean {
  if (mode === 'prefer') return signals.noTlsOffered || tlsProblem(error) !== undefined
  if (mode === 'allow') return signals.plainRefused
  return false
}

type TlsProblem = 'chain' | 'dates' | 'host' | 'handshake'

// Node's certificate errors, by code, or by message where a driver replaced the code (mysql2's HANDSHAKE_SSL_ERROR)
const CHAIN_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
])
const CHAIN_TEXT = /self[- ]signed certificate|unable to (verify the first certificate|get (local )?issuer certificate)|certificate signature failure|certificate not trusted/i
const DATES_TEXT = /certificate (has expired|is not yet valid)/i
const HOST_TEXT = /does not match certificate's altnames/i

function tlsProblem(error: unknown): TlsProblem | undefined {
  const e = (error ?? {}) as {code?: unknown; message?: unknown}
  const code = String(e.code ?? '')
  const message = String(e.message ?? '')
  if (CHAIN_CODES.has(code) || CHAIN_TEXT.test(message)) return 'chain'
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID' || DATES_TEXT.test(message)) return 'dates'
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || HOST_TEXT.test(message)) return 'host'
  if (/^ERR_(SSL|TLS)_/.test(code) || code === 'HANDSHAKE_SSL_ERROR' || /SSL routines|ssl3_|tlsv1 alert|error establishing an SSL connection/i.test(message)) return 'handshake'
  return undefined
}

const SOCKET_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'EACCES', 'ENOTDIR'])

/**
 * A connect failure that TLS or the socket explains, as one line naming the mode and what
 * failed; undefined for any other error (describeDbError words those).
 */
export function transportFailure(error: unknown, route: Route, signals: TransportSignals): ConnectionError | undefined {
  const {tls, where} = route
  const mode = tls.spell(tls.mode)
  const code = String((error as {code?: unknown})?.code ?? '')
  if (route.socket && SOCKET_CODES.has(code)) {
    const what = code === 'EACCES' ? 'no permission to open the socket' : 'no database server listening on the socket'
    return new ConnectionError(`${what} ${where} (${code})`, (o) => `Check the socket path in ${o('url')} and that the server is running`)
  }
  if (signals.noTlsOffered) {
    return new ConnectionError(
      `${mode}: the server at ${where} offers no TLS`,
      `Turn TLS on in the server, or use ${tls.spell('prefer')} (TLS when offered) or ${tls.spell('disable')}`,
    )
  }
  const message = String((error as {message?: unknown})?.message ?? error)
  const reason = code && !message.includes(code) ? `${message}, ${code}` : message
  switch (tlsProblem(error)) {
    case 'chain':
      return new ConnectionError(
        `${mode}: the server's certificate at ${where} is not signed by ${tls.caSource} (${reason})`,
        `Give the CA that signed it in ${tls.caParam}=PATH, or use ${tls.spell('require')} to encrypt without verifying`,
      )
    case 'dates':
      return new ConnectionError(`${mode}: the server's certificate at ${where} is out of its validity dates (${reason})`, 'Renew the server\'s certificate')
    case 'host': {
      // Node's identity error carries the name it checked and the certificate it checked it in
      const {host, cert} = error as {host?: string; cert?: {subjectaltname?: string}}
      const names = cert?.subjectaltname ?? 'other names'
      return new ConnectionError(
        `${mode}: the server's certificate at ${where} is for ${names}, not ${host ?? 'the host dialled'} (${code || message})`,
        `Connect by a name the certificate lists, or use ${tls.spell('verify-ca')} to check the chain but not the name`,
      )
    }
    case 'handshake':
      return new ConnectionError(`${mode}: the TLS handshake with ${where} failed (${reason})`, `Check the server's TLS set-up and the certificate files in the URL`)
  }
  return undefined
}
