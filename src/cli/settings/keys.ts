// Names in the config file. A command's section is its id as typed ("relay", "failed show");
// a flag's key is its name in camelCase ("inbox-table" -> "inboxTable"), as JSON usually is.

export const sectionOf = (id: string): string => id.replaceAll(':', ' ')

export const keyOf = (flag: string): string => flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())

/** Flags the file cannot set: one chooses the file itself, the others the run's output. */
export const NOT_IN_FILE = new Set(['config', 'json', 'help'])

/** Commands with nothing to configure: no section in the file. */
export const NO_SECTION = new Set(['config', 'version'])

/** Top-level keys: the connection and table names, shared by every command that has the flag. */
export const SHARED_FLAGS = ['url', 'table', 'inbox-table', 'archive-table', 'schema']

/** Where a setting came from, in the order that decides (a flag beats everything). */
export type SettingSource = 'flag' | 'env' | 'file' | 'default' | 'unset'

export interface Setting {
  flag: string
  /** the parsed value the command runs with */
  value: unknown
  /** the value as written where it came from (what `outbox config` shows) */
  text?: string
  source: SettingSource
  /** the environment variable or the file's key path that gave the value */
  from?: string
}
