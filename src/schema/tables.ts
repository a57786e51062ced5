// Table names: defaults, validation as SQL identifiers, and quoting through the dialect.
import type {Dialect, TableNames} from '../../dialects/index.js'
import {indexNames} from '../../dialects/shared.js'
import {UsageError} from '../core/errors.js'

export const DEFAULT_TABLES: TableNames = {
  outbox: 'outbox_events',
  inbox: 'outbox_processed',
  archive: 'outbox_events_archive',
}

// Words that are reserved in at least one of our dialects. Quoting would make most of them
// legal, but a table called "select" is a foot-gun in every hand-written query after it.
const RESERVED = new Set(
  `all alter and any as asc between by case check column constraint create cross current_date current_time
current_timestamp database default delete desc distinct drop else end exists false fetch for foreign from full
grant group having in index inner insert intersect into is join key left like limit not null offset on or order
outer primary references right row rows select set table then to true union unique update user using values
when where with`.split(/\s+/),
)

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Throws a UsageError naming the option (table, inboxTable, archiveTable, schema) unless `name` is a plain identifier the dialect accepts. */
export function validateIdentifier(name: string, option: string, dialect?: Dialect, reserveForSuffix = 0): string {
  if (name === '') throw new UsageError((o) => `${o(option)} is empty`, 'Give a table name such as outbox_events')
  if (!IDENTIFIER.test(name)) {
    throw new UsageError(
      (o) => `${o(option)} ${JSON.stringify(name)} is not a valid identifier`,
      'Use letters, digits and underscores, starting with a letter or underscore',
    )
  }
  if (RESERVED.has(name.toLowerCase())) {
    throw new UsageError((o) => `${o(option)} ${JSON.stringify(name)} is a reserved SQL word`, 'Choose another name, e.g. app_' + name)
  }
  const max = (dialect?.render.maxIdentifierLength ?? 63) - reserveForSuffix
  if (name.length > max) {
    throw new UsageError(
      (o) => `${o(option)} ${JSON.stringify(name)} is ${name.length} characters; at most ${max} fit on ${dialect?.name ?? 'every dialect'}`,
      reserveForSuffix ? 'Index names append a suffix to the table name; shorten it' : 'Shorten it',
    )
  }
  return name
}

export interface TableFlags {
  schema?: string
  table?: string
  inboxTable?: string
  archiveTable?: string
}

/** Resolves and validates table names; derived index names must fit too. */
export function resolveTables(flags: TableFlags, dialect?: Dialect): TableNames {
  const names: TableNames = {
    outbox: flags.table ?? DEFAULT_TABLES.outbox,
    inbox: flags.inboxTable ?? DEFAULT_TABLES.inbox,
    archive: flags.archiveTable ?? DEFAULT_TABLES.archive,
  }
  const longestSuffix = (base: string) =>
    Math.max(0, ...Object.values(indexNames(names)).filter((n) => n.startsWith(base + '_')).map((n) => n.length - base.length))
  validateIdentifier(names.outbox, 'table', dialect, longestSuffix(names.outbox))
  validateIdentifier(names.inbox, 'inboxTable', dialect, longestSuffix(names.inbox))
  validateIdentifier(names.archive, 'archiveTable', dialect, longestSuffix(names.archive))
  const distinct = new Set([names.outbox, names.inbox, names.archive])
  if (distinct.size < 3) throw new UsageError((o) => `${o('table')}, ${o('inboxTable')} and ${o('archiveTable')} must differ`, 'Give each table its own name')
  if (flags.schema !== undefined) {
    if (dialect && !dialect.render.schemas) throw new UsageError((o) => `${o('schema')} names a schema; ${dialect.displayName} has none`, (o) => `Drop ${o('schema')}`)
    names.schema = validateIdentifier(flags.schema, 'schema', dialect)
  }
  return names
}
