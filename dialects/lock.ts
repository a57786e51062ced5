// NamedLock: a lock by name that holds until the end of the transaction it is taken in
// (src/db/lock.ts runUnderLock): `init --apply` run by a deploy's replicas at once, consumers
// checking one aggregate's versions.
import type {Sql} from './sql.js'

export interface NamedLock {
  /**
   * Takes the lock, waiting at most waitSeconds; returns one row whose `got` is 0 when the lock
   * was not had in time. A lock that waits as long as the session's lock timeout allows returns
   * no `got` column: the wait's error is the answer then.
   */
  take(key: string, waitSeconds: number): Sql
  /**
   * Gives the lock back once the transaction has ended, where it outlives the transaction
   * (MySQL's GET_LOCK). Undefined: the transaction's end releases it.
   */
  release?(key: string): Sql
}
