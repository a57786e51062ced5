// mysql: the named lock is GET_LOCK, a session lock: given back after the transaction ends.
import type {NamedLock} from '../dialect.js'
import {sql} from '../sql.js'

export const namedLock: NamedLock = {
  take: (key, waitSeconds) => sql`SELECT GET_LOCK(${key}, ${waitSeconds}) AS got`,
  release: (key) => sql`SELECT RELEASE_LOCK(${key}) AS released`,
}
