// mysql: connecting through mysql2 (connect.ts, imported on the first open), and telling a
// mysql2/promise connection apart when writeEvent is given one.
import {UsageError} from '../../src/core/errors.js'
import {lazyOpen, method, type DriverPart} from '../driver.js'

export const driver: DriverPart = {
  open: lazyOpen(() => import('./connect.js')),
  // a query/execute pair is all it takes, so the caller's dialect option wins over this guess
  client: (executor) => {
    const query = method(executor, 'query')
    const execute = method(executor, 'execute')
    if (!query || !execute) return undefined
    // the atomicity is the point: a pool would run the insert on whichever connection is free,
    // committed on its own; a callback connection returns no promise, so a failure goes unseen
    if (method(executor, 'getConnection')) {
      throw new UsageError('writeEvent was given a connection pool', 'Pass the connection your transaction runs on (await pool.getConnection(), then beginTransaction)')
    }
    if (method(executor, 'promise')) {
      throw new UsageError('writeEvent was given a mysql2 callback connection', 'Pass connection.promise(), or a connection from mysql2/promise')
    }
    return {run: (text, params) => execute(text, params) as Promise<unknown>, sure: false}
  },
  kyselyAdapter: /mysql/i,
}
