// postgres: the named lock is a transaction-level advisory lock on the key's hash.
import type {NamedLock} from '../dialect.js'
import {sql} from '../sql.js'

// waits as long as the session's lock_timeout allows; released by the transaction's end
export const namedLock: NamedLock = {take: (key) => sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0)) AS got_lock`}
