// Passwords out of every text a user or a log sees: URLs and driver errors.
/** The URL with its password replaced by ***; safe for any output. */
// The password runs from the first ':' of the userinfo to the last '@' (an unencoded '@', '?',
// '#' or '/' in it must not cut it short); a password=... query parameter counts too, and so does
// a TLS key's passphrase (libpq's sslpassword=, a "passphrase" in mysql2's ssl={...}). A URL
// with no host (a Unix socket: postgres://u:pw@/db?host=/run/postgresql) is masked the same way.
const USERINFO_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^:/@?#]*):.*@/i
const USERINFO_PASSWORD_IN_TEXT = /([a-z][a-z0-9+.-]*:\/\/[^:/@\s?#]*):\S*@/gi
const QUERY_PASSWORD = /([?&](?:password|pass|pwd|sslpassword)=)[^&#\s]*/gi
const JSON_PASSPHRASE = /((?:"|%22)passphrase(?:"|%22)\s*(?::|%3A)\s*(?:"|%22))((?:[^"%]|%(?!22))*)/gi

export function redactUrl(url: string): string {
  return url.replace(USERINFO_PASSWORD, '$1:***@').replace(QUERY_PASSWORD, '$1***').replace(JSON_PASSPHRASE, '$1***')
}

/** Removes the URL's password (raw and percent-decoded) from any text, e.g. a driver error. */
export function redactSecrets(text: string, url?: string): string {
  let out = text.replace(USERINFO_PASSWORD_IN_TEXT, '$1:***@').replace(QUERY_PASSWORD, '$1***').replace(JSON_PASSPHRASE, '$1***')
  for (const password of url ? passwordsOf(url) : []) {
    for (const secret of new Set([password, safeDecode(password)])) if (secret.length >= 3) out = out.split(secret).join('***')
  }
  return out
}

function passwordsOf(url: string): string[] {
  const inUserinfo = /^[a-z][a-z0-9+.-]*:\/\/[^:/@?#]*:(.*)@/i.exec(url)?.[1]
  const inQuery = [...url.matchAll(/[?&](?:password|pass|pwd|sslpassword)=([^&#]*)/gi)].map((m) => m[1])
  const inJson = [...url.matchAll(JSON_PASSPHRASE)].map((m) => m[2])
  return [inUserinfo, ...inQuery, ...inJson].filter((p): p is string => Boolean(p))
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
