// postgres: connecting through pg (connect.ts, imported on the first open), and telling a pg
// client apart when writeEvent is given one.
import {lazyOpen, method, type DriverPart} from '../driver.js'

export const driver: DriverPart = {
  open: lazyOpen(() => import('./connect.js')),
  // a pg Client or PoolClient: escapeIdentifier is pg's own
  client: (executor) => {
    const query = method(executor, 'query')
    if (!query || !method(executor, 'escapeIdentifier')) return undefined
    return {run: (text, values) => query({text, values}) as Promise<unknown>, sure: true}
  },
  kyselyAdapter: /postgres/i,
}
