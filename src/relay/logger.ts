// Relay logs on stderr (stdout may carry events): plain "time level msg k=v" lines, or one
// JSON object per line with --log-format json. Secrets (URL passwords) are scrubbed.
import {redactSecrets} from '../core/redact.js'
import {printable} from '../core/text.js'
import type {RelayLogger} from './relay.js'

export type LogFormat = 'text' | 'json'

export interface LoggerOptions {
  format?: LogFormat
  stream?: NodeJS.WritableStream
  /** URLs whose passwords must never be printed */
  secrets?: (string | undefined)[]
  /** drop info lines (warnings and errors only) */
  quiet?: boolean
}

function kv(fields: object): string {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && /[\s"=]/.test(v) ? JSON.stringify(v) : typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' ')
}

export function createLogger(options: LoggerOptions = {}): RelayLogger {
  const stream = options.stream ?? process.stderr
  const secrets = options.secrets?.filter((s): s is string => Boolean(s)) ?? []
  const scrub = (text: string) => secrets.reduce<string>((t, url) => redactSecrets(t, url), redactSecrets(text))
  const write = (level: 'info' | 'warn' | 'error', msg: string, fields?: object) => {
    if (level === 'info' && options.quiet) return
    const time = new Date().toISOString()
    const line = options.format === 'json' ? JSON.stringify({time, level, msg, ...fields}) : `${time} ${level.padEnd(5)} ${msg}${fields && Object.keys(fields).length ? ' ' + kv(fields) : ''}`
    // error texts come from brokers and receivers: their control characters are shown, not sent
    stream.write(printable(scrub(line)) + '\n')
  }
  return {
    info: (msg, fields) => write('info', msg, fields),
    warn: (msg, fields) => write('warn', msg, fields),
    error: (msg, fields) => write('error', msg, fields),
  }
}
