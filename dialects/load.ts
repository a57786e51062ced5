// One dialect's modules, imported when a command needs them. The library's entry point
// (dialects/index.ts) loads all three; the CLI loads only the one it uses, which keeps
// `outbox init --dialect postgres` at a third of the dialect modules (bench/suites/startup.js).
import type {Dialect, DialectName} from './dialect.js'

export async function loadDialect(name: DialectName): Promise<Dialect> {
  switch (name) {
    case 'postgres':
      return (await import('./postgres/index.js')).postgres
    case 'mysql':
      return (await import('./mysql/index.js')).mysql
    case 'sqlite':
      return (await import('./sqlite/index.js')).sqlite
  }
}
