// Flags shared by several commands, typed once.
import {Flags} from '@oclif/core'
import {DIALECT_NAMES} from '../../dialects/index.js'

export const connectionFlags = {
  url: Flags.string({
    description: 'database URL (postgres://, mysql://, mariadb://, sqlite:PATH); default $OUTBOX_DATABASE_URL, then $DATABASE_URL',
    helpValue: 'URL',
  }),
  config: Flags.string({description: 'JSON config file with url and table names (default ./outbox.config.json)', helpValue: 'FILE'}),
}

export const tableFlags = {
  table: Flags.string({description: 'outbox table (default outbox_events)', helpValue: 'NAME'}),
  'inbox-table': Flags.string({description: 'inbox (processed events) table (default outbox_processed)', helpValue: 'NAME'}),
  'archive-table': Flags.string({description: 'archive table (default outbox_events_archive)', helpValue: 'NAME'}),
  schema: Flags.string({description: 'PostgreSQL schema for the tables (default: the search_path)', helpValue: 'NAME'}),
}

export const dialectFlag = Flags.string({
  description: `SQL dialect (${DIALECT_NAMES.join(', ')}; mariadb is mysql)`,
  helpValue: 'DIALECT',
})

/** Table flags in the shape src/schema.ts takes. */
export function tableNamesFrom(flags: {table?: string; 'inbox-table'?: string; 'archive-table'?: string; schema?: string}) {
  return {table: flags.table, inboxTable: flags['inbox-table'], archiveTable: flags['archive-table'], schema: flags.schema}
}
