// What the config file says for one command: its keys checked against every command's flags
// (the manifest, so no command is loaded), its values parsed by the flag's own parser, so the
// file accepts exactly what the command line does and says which key is wrong.
import type {Command} from '@oclif/core'
import type {ConfigFile} from '../../config.js'
import {OutboxError, UsageError} from '../../core/errors.js'
import {keyOf, NO_SECTION, NOT_IN_FILE, sectionOf, SHARED_FLAGS} from './keys.js'

/** A flag as parse sees it: the manifest's fields, plus its parser when the command is loaded. */
export interface FlagLike {
  name?: string
  type: 'boolean' | 'option'
  multiple?: boolean
  options?: readonly string[]
  parse?: (input: string, context: unknown, flag: unknown) => Promise<unknown>
}

export interface FileValue {
  value: unknown
  /** e.g. relay.batch, or url for a top-level key */
  key: string
}

/** The file's raw values for command `id`, its section over its shared keys; the whole file's keys are checked first. */
export function fileValuesFor(id: string, file: ConfigFile, path: string, commands: readonly Command.Loadable[], opts: {sharedUrl: boolean}): Map<string, FileValue> {
  checkKeys(file, path, commands)
  const command = commands.find((c) => c.id === id)
  const values = new Map<string, FileValue>()
  if (!command) return values
  for (const flag of SHARED_FLAGS) {
    if (flag === 'url' && !opts.sharedUrl) continue
    const key = keyOf(flag)
    if (command.flags[flag] && file[key] !== undefined) values.set(flag, {value: file[key], key})
  }
  const section = file[sectionOf(id)] as Record<string, unknown> | undefined
  for (const [key, value] of Object.entries(section ?? {})) {
    const flag = flagOfKey(command, key)
    if (flag && value !== undefined) values.set(flag, {value, key: `${sectionOf(id)}.${key}`})
  }
  return values
}

function settable(command: Command.Loadable): string[] {
  return Object.keys(command.flags).filter((flag) => !NOT_IN_FILE.has(flag))
}

function flagOfKey(command: Command.Loadable, key: string): string | undefined {
  return settable(command).find((flag) => keyOf(flag) === key)
}

function checkKeys(file: ConfigFile, path: string, commands: readonly Command.Loadable[]): void {
  const sections = new Map(commands.filter((c) => !c.hidden && !NO_SECTION.has(c.id)).map((c) => [sectionOf(c.id), c]))
  const shared = SHARED_FLAGS.map(keyOf)
  for (const [key, value] of Object.entries(file)) {
    if (key === '$schema' || shared.includes(key)) continue
    const command = sections.get(key)
    if (!command) {
      throw new UsageError(`${path}: unknown key ${JSON.stringify(key)}`, `Top-level keys are ${shared.join(', ')} and a section per command (${[...sections.keys()].join(', ')})`)
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new UsageError(`${path}: ${JSON.stringify(key)} must be an object of outbox ${key}'s settings`, `e.g. "${key}": {${settable(command).slice(0, 2).map((f) => `"${keyOf(f)}": ...`).join(', ')}}`)
    }
    for (const inner of Object.keys(value)) {
      if (!flagOfKey(command, inner)) {
        throw new UsageError(`${path}: ${key}.${inner} is not a setting of outbox ${key}`, `Its settings: ${settable(command).map(keyOf).join(', ')}`)
      }
    }
  }
}

/** A file value through the flag's own parser; errors name the key path instead of the flag. */
export async function parseFileValue(name: string, flag: FlagLike, {value, key}: FileValue, path: string): Promise<unknown> {
  const where = `${key} (${path})`
  if (flag.type === 'boolean') {
    if (typeof value !== 'boolean') throw new UsageError(`${where} must be true or false`, `Write "${key.split('.').pop()}": true`)
    return value
  }
  const items = flag.multiple ? (Array.isArray(value) ? value : [value]) : [value]
  const parsed = []
  for (const item of items) {
    if (typeof item !== 'string' && typeof item !== 'number') {
      throw new UsageError(`${where} must be ${flag.multiple ? 'a list of ' : ''}${flag.multiple ? 'strings' : 'a string'}${flag.options ? '' : ' or number'}`, `Write it as on the command line, e.g. "${key.split('.').pop()}": "..."`)
    }
    const text = String(item)
    if (flag.options && !flag.options.includes(text)) throw new UsageError(`${where} must be one of: ${flag.options.join(', ')}`, `Not ${JSON.stringify(text)}`)
    parsed.push(await throughParser(name, flag, text, where))
  }
  return flag.multiple ? parsed : parsed[0]
}

async function throughParser(name: string, flag: FlagLike, text: string, where: string): Promise<unknown> {
  if (!flag.parse) return text
  try {
    return await flag.parse(text, undefined, {...flag, name})
  } catch (error) {
    // the parser names the flag as typed (--batch): here it is the file's key
    const reword = (s: string) => s.replaceAll(`--${name}`, where)
    if (error instanceof OutboxError) throw new UsageError(reword(error.line((option) => (option === name ? where : `--${option}`))))
    throw new UsageError(`${where}: ${String((error as Error)?.message ?? error).split('\n')[0]}`)
  }
}
