// Shared shape of the `outbox sql ...` commands: dialect + tables + style, then print.
import {Flags} from '@oclif/core'
import type {Dialect, TableNames} from '../../dialects/index.js'
import {dialectOfName} from '../config.js'
import {isUuid} from '../core/uuid.js'
import {UsageError} from '../core/errors.js'
import {resolveTables} from '../schema/tables.js'
import {renderStatements, type PrintedStatement} from '../relay/sql-text.js'
import {OutboxCommand} from './base.js'
import {dialectFlag, tableFlags, tableNamesFrom} from './flags.js'

export const sqlFlags = {
  dialect: dialectFlag,
  ...tableFlags,
  params: Flags.boolean({description: 'print the parameterised statements the relay binds, with their parameters'}),
}

export abstract class SqlCommand extends OutboxCommand {
  static override enableJsonFlag = true

  protected target(flags: {dialect?: string; table?: string; 'inbox-table'?: string; 'archive-table'?: string; schema?: string}): {
    dialect: Dialect
    names: TableNames
  } {
    if (!flags.dialect) throw new UsageError('--dialect is required', 'Use --dialect postgres, mysql or sqlite')
    const dialect = dialectOfName(flags.dialect)
    return {dialect, names: resolveTables(tableNamesFrom(flags), dialect)}
  }

  protected emit(dialect: Dialect, statements: PrintedStatement[]) {
    if (!this.jsonEnabled()) process.stdout.write(renderStatements(statements))
    return {dialect: dialect.name, statements}
  }
}

export function positiveInt(text: string, flag: string, max = 1_000_000): number {
  if (!/^\d+$/.test(text.trim())) throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a positive whole number`, `Use e.g. --${flag} 100`)
  const n = Number(text)
  if (n < 1 || n > max) throw new UsageError(`--${flag} must be between 1 and ${max}`, `Use e.g. --${flag} ${Math.min(100, max)}`)
  return n
}

export function nonNegativeInt(text: string, flag: string, max = 1_000_000): number {
  if (!/^\d+$/.test(text.trim())) throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a whole number`, `Use e.g. --${flag} 10`)
  const n = Number(text)
  if (n > max) throw new UsageError(`--${flag} must be at most ${max}`, `Use a whole number from 0 to ${max}`)
  return n
}

export function idsFrom(text: string | undefined): string[] {
  if (!text) return ['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002']
  const ids = text.split(',').map((s) => s.trim()).filter(Boolean)
  if (ids.length === 0) throw new UsageError('--ids is empty', 'Give comma-separated event ids')
  for (const id of ids) checkId(id, 'ids')
  return ids
}

/** An event id is a UUID (PostgreSQL would refuse anything else only when the printed SQL runs). */
export function checkId(id: string, flag: string): string {
  if (!isUuid(id)) throw new UsageError(`--${flag}: ${JSON.stringify(id)} is not an event id`, 'Give the UUID of an event')
  return id.toLowerCase()
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
