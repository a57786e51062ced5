// sqlite: connecting through better-sqlite3 (connect.ts, imported on the first open), a file
// that must be there already, and better-sqlite3 refused by writeEvent (it is synchronous).
import {UsageError} from '../../src/core/errors.js'
import {lazyOpen, method, type DriverPart} from '../driver.js'

export const driver: DriverPart = {
  open: lazyOpen(() => import('./connect.js')),
  requireExisting: async (url) => (await import('../../src/db/url.js')).requireSqliteFile(url),
  client: (executor) => {
    if (method(executor, 'prepare') && method(executor, 'pragma')) {
      throw new UsageError('better-sqlite3 is synchronous', 'Use writeEventSync(database, event) inside database.transaction(...)')
    }
    return undefined
  },
  kyselyAdapter: /sqlite/i,
}
