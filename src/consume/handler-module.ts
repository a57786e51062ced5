// `outbox consume --handler FILE`: a module whose default export is `async (event, tx) => void`.
import {existsSync} from 'node:fs'
import {resolve} from 'node:path'
import {pathToFileURL} from 'node:url'
import {UsageError} from '../core/errors.js'
import type {EventHandler} from './loop.js'

export async function loadHandler(path: string, cwd = process.cwd()): Promise<EventHandler> {
  const file = resolve(cwd, path)
  if (!existsSync(file)) throw new UsageError((o) => `${o('handler')} ${path}: no such file`, 'Point it at a module whose default export is async (event, tx) => { ... }')
  let module: {default?: unknown}
  try {
    module = await import(pathToFileURL(file).href)
  } catch (error) {
    throw new UsageError((o) => `${o('handler')} ${path} failed to load: ${String((error as Error)?.message ?? error).split('\n')[0]}`, 'Fix the module, or run it with node to see the whole error')
  }
  const handler = module.default
  if (typeof handler !== 'function') {
    throw new UsageError((o) => `${o('handler')} ${path} has no default export function`, 'Export one: export default async (event, tx) => { ... } (or module.exports = async (event, tx) => { ... })')
  }
  return handler as EventHandler
}
