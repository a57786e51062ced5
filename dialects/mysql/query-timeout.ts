// OpenOptions.queryTimeoutMs on MySQL / MariaDB: mysql2 has a timeout per query only (none in
// the pool's config), and after it fires the connection still waits for the answer, so the
// next command on it would wait too. Every query and execute with a callback (ours, the
// promise API's, Kysely's) gets the timeout, and a connection whose query timed out is
// destroyed: out of the pool, its socket closed.
import type {PoolConnection as CallbackConnection} from 'mysql2'

type Callback = (error: (Error & {code?: string}) | null, ...rest: unknown[]) => void
type Command = (this: CallbackConnection, ...args: unknown[]) => unknown

const TIMED_OUT = 'PROTOCOL_SEQUENCE_TIMEOUT'

export function boundAnswers(connection: CallbackConnection, ms: number): void {
  for (const name of ['query', 'execute'] as const) {
    const original = connection[name] as unknown as Command
    ;(connection as unknown as Record<string, Command>)[name] = function (this: CallbackConnection, ...args: unknown[]) {
      const last = args.length - 1
      // without a callback a timeout would be an 'error' event nobody listens to: left as is
      if (typeof args[last] !== 'function' || (typeof args[0] !== 'string' && !isPlainOptions(args[0]))) return original.apply(this, args)
      const done = args[last] as Callback
      args[last] = ((error, ...rest) => {
        if (error?.code === TIMED_OUT) connection.destroy()
        done(error, ...rest)
      }) satisfies Callback
      args[0] = typeof args[0] === 'string' ? {sql: args[0], timeout: ms} : {timeout: ms, ...(args[0] as object)}
      return original.apply(this, args)
    }
  }
}

/** {sql, values, ...}: not a prepared Query command object */
function isPlainOptions(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype
}
