// The database drivers and broker clients are optional peer dependencies: an app installs the
// ones it uses (a PostgreSQL-only app compiles no SQLite). When one is missing, the URL or the
// publisher that needed it says which package to install, in one line.
import {createRequire} from 'node:module'
import {UsageError} from './errors.js'

/** `load()` (an `import('pg')`), or a UsageError naming the package `what` needs. */
export async function importOptional<T>(name: string, what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    if (!isMissing(error, name)) throw error
    throw new UsageError(`${what} needs the ${name} package, which is not installed`, `Install it next to outbox: npm install ${name}`)
  }
}

/**
 * The package `name` when the app installed it, else undefined: for a peer whose absence only
 * turns a feature off (tracing). Synchronous, so writeEventSync can use it too; the caller
 * keeps what it returns, and Node caches the module.
 */
export function requireIfInstalled<T>(name: string): T | undefined {
  try {
    return createRequire(import.meta.url)(name) as T
  } catch (error) {
    if (isMissing(error, name)) return undefined
    throw error
  }
}

function isMissing(error: unknown, name: string): boolean {
  const e = error as {code?: string; message?: string}
  // ESM reports the package it could not find by name: a missing dependency OF the package is another error
  return (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') && new RegExp(`['"]${name.replace(/[/.]/g, '\\$&')}['"/]`).test(String(e.message))
}
