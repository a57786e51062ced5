// `outbox verify` as a library call: create a scratch table, run the checks, always drop it.
import {randomBytes} from 'node:crypto'
import {raw, sql, type OptionalCheck, type TableNames} from '../../dialects/index.js'
import {dialectOfUrl} from '../config.js'
import {describeDbError, openDb, type Db} from '../db/index.js'
import {ConnectionError, UsageError} from '../core/errors.js'
import {initPlan} from '../schema/init.js'
import {resolveTables} from '../schema/tables.js'
import {notApplicable, type Check} from './check.js'
import {carriedMarkCheck} from './carried-mark.js'
import {claimersCheck} from './claimers.js'
import {Interrupted, VerifyContext} from './context.js'
import {indexCheck} from './index-plan.js'
import {leaseCheck} from './lease.js'
import {limitCheck} from './limit.js'
import {producerCheck} from './producer.js'
import {secondSessionCheck} from './second-session.js'
import {isolationCheck, serverCheck} from './server.js'
import type {CheckResult, VerifyOptions, VerifyReport} from './types.js'

/** In table order. The server check gates the rest: without SKIP LOCKED the claim cannot run. */
export const CHECKS: Check[] = [serverCheck, isolationCheck, claimersCheck, secondSessionCheck, leaseCheck, carriedMarkCheck, limitCheck, indexCheck, producerCheck]

export async function verify(url: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  await validate(url, options)
  const db = await openDb(url, {poolSize: 2})
  try {
    const [row] = await db.query<{version: string}>(db.dialect.verify.serverVersion())
    const version = String(row.version)
    const names = scratchNames(db, options.schema)
    const ctx = new VerifyContext(url, db, names, version, options)
    const checks = CHECKS.filter((c) => c.id === 'server' || !options.only || options.only.includes(c.id))
    const results: CheckResult[] = []
    const server = await runCheck(ctx, serverCheck, 0, checks.length)
    results.push(server)
    if (!server.ok) {
      for (const c of checks.slice(1)) results.push({check: c.id, title: c.title, status: 'skip', ok: false, detail: 'not run: the server cannot run the claim', ms: 0})
    } else {
      await createScratch(db, names, url, options)
      try {
        for (const [i, check] of checks.slice(1).entries()) {
          ctx.throwIfAborted()
          results.push(await runCheck(ctx, check, i + 1, checks.length))
          await ctx.closeSessions()
        }
      } finally {
        await ctx.closeSessions()
        await db.execute(db.dialect.verify.dropOutbox(names)).catch((error) => {
          throw new ConnectionError(`could not drop the scratch table ${names.outbox} (${describeDbError(error, url).message})`, 'Drop it by hand')
        })
      }
    }
    ctx.throwIfAborted()
    return {ok: results.every((r) => r.ok), dialect: db.dialect.name, version, scratchTable: names.outbox, checks: results}
  } finally {
    await db.close().catch(() => {})
  }
}

async function runCheck(ctx: VerifyContext, check: Check, index: number, total: number): Promise<CheckResult> {
  const progress = ctx.options.onProgress
  progress?.({index, total, title: check.title})
  ctx.onNote = progress && ((note) => progress({index, total, title: check.title, note}))
  const start = performance.now()
  try {
    // a check that does not apply to this database is reported n/a with the dialect's reason
    const skip = ctx.dialect.verify.notApplicable[check.id as OptionalCheck]
    const outcome = skip ? notApplicable(skip) : await check.run(ctx)
    const status = outcome.skip ? 'skip' : outcome.ok ? 'pass' : 'fail'
    return {check: check.id, title: check.title, status, ok: outcome.ok, detail: outcome.detail, ms: Math.round(performance.now() - start)}
  } catch (error) {
    if (error instanceof Interrupted || ctx.options.signal?.aborted) throw new Interrupted()
    const message = describeDbError(error, ctx.url).message
    return {check: check.id, title: check.title, status: 'fail', ok: false, detail: `error: ${message}`, ms: Math.round(performance.now() - start)}
  } finally {
    ctx.onNote = undefined
  }
}

async function validate(url: string, options: VerifyOptions): Promise<void> {
  const dialect = await dialectOfUrl(url)
  const refused = dialect.verify.urlProblem?.(url)
  if (refused) throw new UsageError(refused.message, refused.hint)
  if (options.partitionBy) initPlan(dialect, {outbox: 'x', inbox: 'y', archive: 'z'}, {inbox: false, archive: false, partitionBy: options.partitionBy}) // refuses where the dialect cannot
  const range = (value: number | undefined, option: string, max: number) => {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1 || value > max)) {
      throw new UsageError((o) => `${o(option)} must be a whole number from 1 to ${max}`, (o) => `Use e.g. ${o(option)} 4`)
    }
  }
  range(options.claimers, 'claimers', 64)
  range(options.events, 'events', 100_000)
  range(options.batch, 'batch', 10_000)
}

/** outbox_verify_<random>: never a name a user's table could have by accident. */
function scratchNames(db: Db, schema?: string): TableNames {
  const table = `outbox_verify_${randomBytes(4).toString('hex')}`
  return resolveTables({table, inboxTable: `${table}_in`, archiveTable: `${table}_ar`, schema}, db.dialect)
}

async function createScratch(db: Db, names: TableNames, url: string, options: VerifyOptions): Promise<void> {
  try {
    // a fresh table: its own CREATE TABLE makes the indexes the repair statements are for
    for (const statement of initPlan(db.dialect, names, {inbox: false, archive: false, partitionBy: options.partitionBy}).filter((s) => !s.repairOnly)) {
      if (statement.kind === 'schema') continue // the schema must exist; verify creates only its table
      await db.execute(sql`${raw(statement.sql.replace(/;\s*$/, ''))}`)
    }
  } catch (error) {
    await db.execute(db.dialect.verify.dropOutbox(names)).catch(() => {})
    const reason = describeDbError(error, url).message
    throw new ConnectionError(`cannot create the scratch table ${names.outbox} (${reason})`, (o) => `verify needs CREATE and DROP rights; on PostgreSQL pass ${o('schema')} for a schema where you have them`)
  }
}
