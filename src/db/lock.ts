// A transaction under a named lock (Dialect.namedLock): `init --apply` run by a deploy's
// replicas at once, consumers checking one aggregate's versions. Where the dialect's lock
// outlives the transaction (MySQL's GET_LOCK), it is given back once the transaction ended.
import {ConnectionError} from '../core/errors.js'
import type {Db, Queryable} from './types.js'

export async function runUnderLock<T>(db: Db, lock: {key: string; waitSeconds: number; busy: string}, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const named = db.dialect.namedLock
  if (!named) return db.transaction(fn)
  return db.transaction(
    async (tx) => {
      const [row] = await tx.query(named.take(lock.key, lock.waitSeconds))
      if (row && Number(row.got) === 0) throw new ConnectionError(`${lock.busy} held its lock for ${lock.waitSeconds} s`, 'Run it again once that one is done')
      return fn(tx)
    },
    named.release ? {after: named.release(lock.key)} : undefined,
  )
}
