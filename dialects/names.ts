// Dialect names, their aliases and URL schemes. Nothing here loads a dialect, so a command can
// check `--dialect` or a URL before it imports the one dialect it needs (dialects/load.ts).
import type {DialectName} from './dialect.js'

export const DIALECT_NAMES: readonly DialectName[] = ['postgres', 'mysql', 'sqlite']

const ALIASES: Record<string, DialectName> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  pg: 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
  sqlite: 'sqlite',
  sqlite3: 'sqlite',
}

/** The dialect a name or alias means (`postgresql`, `pg`, `mariadb`, `sqlite3`, ...), any case. */
export function dialectNameOf(name: string): DialectName | undefined {
  return Object.hasOwn(ALIASES, name.toLowerCase()) ? ALIASES[name.toLowerCase()] : undefined
}

/** `postgres://`, `postgresql://`, `mysql://`, `mariadb://`, `sqlite:PATH`. (`pg:` is no URL scheme.) */
export function dialectNameForUrl(url: string): DialectName | undefined {
  const match = /^([a-z][a-z0-9+.-]*):/i.exec(url)
  if (!match) return undefined
  const scheme = match[1].toLowerCase()
  return scheme === 'pg' ? undefined : dialectNameOf(scheme)
}
