// postgres: connecting through pg (connect.ts, imported on the first open), and telling an
// app's pg client or pool apart when writeEvent or Consumer is given one.
import {lazyOpen, method, type DriverPart, type DriverSession} from '../driver.js'

interface PgClient {
  query(config: {text: string; values: unknown[]}): Promise<{rows: Record<string, unknown>[]; rowCount: number | null}>
}

function session(client: PgClient): DriverSession {
  return {
    native: client,
    run: async (text, values) => {
      const result = await client.query({text, values})
      return {rows: result.rows, affected: result.rowCount ?? 0}
    },
  }
}

export const driver: DriverPart = {
  open: lazyOpen(() => import('./connect.js')),
  executor: (executor) => {
    // a pg Client or PoolClient: escapeIdentifier is pg's own
    if (method(executor, 'query') && method(executor, 'escapeIdentifier')) return {kind: 'session', sure: true, begin: 'BEGIN', session: session(executor as PgClient)}
    // a pg Pool: connect() hands out clients, and the counters are pg-pool's own
    const connect = method(executor, 'connect')
    if (connect && method(executor, 'query') && typeof (executor as {idleCount?: unknown}).idleCount === 'number') {
      return {
        kind: 'pool',
        sure: true,
        begin: 'BEGIN',
        acquire: async () => {
          const client = (await connect()) as PgClient & {release(destroy?: boolean): void}
          return {session: session(client), release: (destroy) => client.release(destroy || undefined)}
        },
      }
    }
    return undefined
  },
  kyselyAdapter: /postgres/i,
}
