// Shared shape of the `outbox sql ...` commands: dialect + tables + style, then print.
import {Flags} from '@oclif/core'
import type {Dialect, TableNames} from '../../dialects/index.js'
import {dialectOfName} from '../config.js'
import {UsageError} from '../core/errors.js'
import {resolveTables} from '../schema/tables.js'
import {renderStatements, type PrintedStatement} from '../relay/sql-text.js'
import {OutboxCommand} from './base.js'
import {dialectFlag, eventIds, tableFlags, tableNamesFrom} from './flags.js'

export const sqlFlags = {
  dialect: dialectFlag,
  ...tableFlags,
  params: Flags.boolean({description: 'print the parameterised statements the relay binds, with their parameters'}),
}

/** Every `outbox sql` command prints or refuses: its help ends with this. */
export const SQL_EXIT_CODES = 'Exit codes: 0 printed, 2 bad input (an unknown dialect, an invalid identifier or value; nothing printed).'

/** --ids of mark-published and release: without it (or empty), two example ids. */
export const idsFlag = eventIds({description: 'comma-separated event ids (default: two example ids)'})
const EXAMPLE_IDS = ['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002']

export function idsOrExamples(ids: readonly string[] | undefined): string[] {
  return ids ? [...ids] : EXAMPLE_IDS
}

/** What `outbox sql ... --json` prints (schemas/output/sql.schema.json). */
export interface SqlOutput {
  dialect: string
  statements: PrintedStatement[]
}

export abstract class SqlCommand extends OutboxCommand {
  static override enableJsonFlag = true

  protected async target(flags: {dialect?: string; table?: string; 'inbox-table'?: string; 'archive-table'?: string; schema?: string}): Promise<{
    dialect: Dialect
    names: TableNames
  }> {
    if (!flags.dialect) throw new UsageError('--dialect is required', 'Use --dialect postgres, mysql or sqlite')
    const dialect = await dialectOfName(flags.dialect)
    return {dialect, names: resolveTables(tableNamesFrom(flags), dialect)}
  }

  protected emit(dialect: Dialect, statements: PrintedStatement[]): SqlOutput {
    if (!this.jsonEnabled()) process.stdout.write(renderStatements(statements))
    return {dialect: dialect.name, statements}
  }
}

/**
 * The lease owner a retry or release must name: the update matches only rows whose
 * lease_owner is exactly this, so a made-up default would print SQL that changes nothing.
 * With --params the value is a stand-in to bind.
 */
export function leaseOwner(owner: string | undefined, params: boolean): string {
  if (owner !== undefined) return owner
  if (params) return '<lease_owner>'
  throw new UsageError('--owner is required', 'Give the lease_owner the claim wrote (e.g. relay-1): only that relay\'s lease is changed')
}
