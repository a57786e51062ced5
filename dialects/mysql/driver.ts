// mysql: connecting through mysql2 (connect.ts, imported on the first open), and telling an
// app's mysql2/promise connection or pool apart when writeEvent or Consumer is given one.
import {UsageError} from '../../src/core/errors.js'
import {lazyOpen, method, type DriverPart, type DriverSession} from '../driver.js'

type Query = (text: string, params: unknown[]) => Promise<[unknown, unknown]>

function session(connection: object, query: Query): DriverSession {
  return {
    native: connection,
    run: async (text, params) => {
      // query() interpolates on the client, as our own pool does (connect.ts): no server-side
      // statement left behind per text, and BEGIN/COMMIT go the same way
      const [result] = await query(text, params)
      if (Array.isArray(result)) return {rows: result, affected: 0}
      return {rows: [], affected: (result as {affectedRows?: number}).affectedRows ?? 0}
    },
  }
}

export const driver: DriverPart = {
  open: lazyOpen(() => import('./connect.js')),
  // a query/execute pair is all it takes, so the caller's dialect option wins over this guess
  executor: (executor) => {
    const query = method(executor, 'query') as Query | undefined
    if (!query || !method(executor, 'execute')) return undefined
    // a callback connection or pool returns no promise: a failure would reach nobody
    if (method(executor, 'promise')) {
      throw new UsageError('given a mysql2 callback connection or pool, whose failures would reach nobody', 'Pass its .promise(), or a connection or pool from mysql2/promise')
    }
    const getConnection = method(executor, 'getConnection')
    if (getConnection) {
      return {
        kind: 'pool',
        sure: false,
        begin: 'START TRANSACTION',
        acquire: async () => {
          const connection = (await getConnection()) as {query: Query; release(): void; destroy(): void}
          return {session: session(connection, connection.query.bind(connection)), release: (destroy) => (destroy ? connection.destroy() : connection.release())}
        },
      }
    }
    return {kind: 'session', sure: false, begin: 'START TRANSACTION', session: session(executor, query)}
  },
  kyselyAdapter: /mysql/i,
}
