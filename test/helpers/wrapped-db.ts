// A Db for tests that watch what the library sends: the members named in `overrides` are the
// test's own (built from the real Db, around its calls); every other member is the Db's, bound to it.
import type {Db} from '../../src/db/index.js'

export type DbOverrides = {[K in keyof Db]?: (target: Db) => Db[K]}

export function wrapDb(db: Db, overrides: DbOverrides): Db {
  return new Proxy(db, {
    get(target, key) {
      const make = (overrides as Record<PropertyKey, ((target: Db) => unknown) | undefined>)[key]
      if (make) return make(target)
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
