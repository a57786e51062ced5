// The one place the benchmark suites load the library they measure. It imports only the public
// entry, <dist>/src/index.js (bench/tree.js says which dist), so the same suite code measures any
// build whose internal files have moved: this tree's, or another worktree's (`npm run bench --
// compare` runs the suites against the tree before a restructure and the tree after it).
// Where the public API differs between builds, this file adapts it, and nowhere else.
import {existsSync} from 'node:fs'
import {createRequire} from 'node:module'
import {pathToFileURL} from 'node:url'
import {ENTRY, TREE} from './tree.js'

export {BIN, DIST, TREE} from './tree.js'

if (!existsSync(ENTRY)) throw new Error(`bench: ${ENTRY} is missing; run \`npm run build\` in ${TREE} first`)

/** The public entry as a module namespace (writeEvent, readStatus, archive, ...). */
export const lib = await import(pathToFileURL(ENTRY).href)

/**
 * A database driver ('pg', 'mysql2/promise', 'better-sqlite3') as the build under test loads it,
 * from that tree's node_modules: a bare-driver baseline then runs on the library's own driver, and
 * one process never holds two copies of SQLite, whose file locks do not see each other (two
 * copies on one database file fail with "disk I/O error").
 */
export async function driver(name) {
  const module = await import(pathToFileURL(createRequire(ENTRY).resolve(name)).href)
  return module.default ?? module
}

export const {Relay, claimBatch, openDb, applyInit, initPlan, ensurePartitions, sql, raw, join, databaseNow, readStatus, statusRowsRead, archive, replay} = lib

// ---- the Dialect in named parts ----
// Builds before the restructure's step 3 (d3ed054 and older) have one flat Dialect object
// (dialect.claim, dialect.table, dialect.ddl(...)); later ones group it into parts
// (dialect.relay.claim, dialect.render.table, dialect.ddl.statements(...)). Suites use the parts;
// a flat dialect is shown as parts whose members are its own (same functions, same `this`),
// except ddl, the one name both layouts use for different things.
const views = new WeakMap()

/** The dialect's render / relay / ddl parts, whichever layout the build has. */
export function parts(dialect) {
  if (dialect.render && dialect.relay) return dialect
  let view = views.get(dialect)
  if (!view) {
    const flat = dialect
    view = {
      name: flat.name,
      render: flat,
      relay: flat,
      ddl: {statements: (names, options) => flat.ddl(names, options), existingColumns: (names) => flat.existingColumns(names), existingObjects: (names) => flat.existingObjects(names)},
    }
    views.set(dialect, view)
  }
  return view
}

/** parts() of the dialect an open Db speaks. */
export const dialectOf = (db) => parts(db.dialect)

/** Every dialect by name, as parts. */
export const DIALECTS = Object.fromEntries(Object.entries(lib.DIALECTS).map(([name, dialect]) => [name, parts(dialect)]))

/**
 * The statement that puts a MySQL session in READ COMMITTED, as the relay's claim plan asks
 * for it (plan.session): the raw loop runs it the way the library's MySQL driver does.
 */
export const MYSQL_READ_COMMITTED = (() => {
  const plan = DIALECTS.mysql.relay.claim({outbox: 'o', inbox: 'i', archive: 'a'}, {batch: 1, leaseMs: 1000, owner: 'bench'})
  const texts = (plan.session ?? []).map((statement) => DIALECTS.mysql.render.compile(statement).text)
  const text = texts.find((t) => /READ COMMITTED/i.test(t))
  if (!text) throw new Error(`bench: the MySQL claim plan no longer names READ COMMITTED among its session statements (${JSON.stringify(texts)})`)
  return text
})()
