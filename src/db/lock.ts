// A transaction under a named lock (Dialect.namedLock): `init --apply` run by a deploy's
// replicas at once, consumers checking one aggregate's versions. Where the dialect's lock
// outlives the transaction (MySQL's GET_LOCK), it is given back once the transaction ended.
import {ConnectionError} from '../core/errors.js'
import type {Queryable, TransactionHost} from './types.js'

/** A Db, or a Consumer's transaction host: fn gets our Queryable and the host's transaction object. */
type LockHost<Tx> = Pick<TransactionHost<Tx>, 'dialect' | 'transaction'>

export async function runUnderLock<T, Tx>(host: LockHost<Tx>, lock: {key: string; waitSeconds: number; busy: string}, fn: (q: Queryable, tx: Tx) => Promise<T>): Promise<T> {
  const named = host.dialect.namedLock
  if (!named) return host.transaction(fn)
  return host.transaction(
    async (q, tx) => {
      const [row] = await q.query(named.take(lock.key, lock.waitSeconds))
      if (row && Number(row.got) === 0) throw new ConnectionError(`${lock.busy} held its lock for ${lock.waitSeconds} s`, 'Run it again once that one is done')
      return fn(q, tx)
    },
    named.release ? {after: named.release(lock.key)} : undefined,
  )
}
