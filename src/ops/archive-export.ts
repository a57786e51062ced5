// archive --to-file: every archived row also appended to a JSON Lines file, written and synced
// before its batch commits, under failed show --json's names.
import {accessSync, constants, existsSync, statSync} from 'node:fs'
import {dirname, resolve as resolvePath} from 'node:path'
import {open, type FileHandle} from 'node:fs/promises'
import {sql} from 'kysely'
import {UsageError} from '../core/errors.js'
import type {BatchRow} from './batch-rows.js'
import {ALL_COLUMNS, exactIso, toStoredEvent, type StoredEvent} from './events.js'
import type {OpsContext} from './query.js'

// times as the database holds them (microseconds on PostgreSQL and MySQL), not as a driver's Date
const TIME_COLUMNS = ['created_at', 'published_at', 'lease_until', 'failed_at'] as const

export type ExportColumns = ReturnType<typeof exportColumns>

/**
 * What the export reads of each row besides id, event_type and cursor_at: every column, the
 * times also as exact text (`<column>_text`: an alias of their own, since ORDER BY created_at
 * would otherwise sort by the text alias on MySQL and PostgreSQL, past the index).
 */
export function exportColumns(ctx: OpsContext) {
  const exact = TIME_COLUMNS.map((c) => sql.raw<string>(ctx.db.dialect.batches.exactTime(c)).as(`${c}_text`))
  return [...ALL_COLUMNS.filter((c) => c !== 'id' && c !== 'event_type'), ...exact]
}

/** Appends a batch's rows and syncs: on disk before the batch commits, so a crash may repeat rows in the file, never lose them. */
export async function exportRows(ctx: OpsContext, file: FileHandle, rows: BatchRow[]): Promise<void> {
  await file.write(rows.map((row) => JSON.stringify(exportedEvent(ctx, row)) + '\n').join(''))
  await file.sync()
}

/** One line of the export: the event's columns under failed show --json's names, its times to the microsecond where stored so. */
function exportedEvent(ctx: OpsContext, row: BatchRow): StoredEvent {
  const event = toStoredEvent(ctx.db.dialect, row)
  const exact = (c: (typeof TIME_COLUMNS)[number]) => exactIso(row[`${c}_text`])
  return {...event, createdAt: exact('created_at') ?? event.createdAt, publishedAt: exact('published_at'), leaseUntil: exact('lease_until'), failedAt: exact('failed_at')}
}

/** Fails fast (before connecting or planning) when --to-file could not be written. */
export function checkExportPath(path: string): void {
  const fail = (why: string) => {
    throw new UsageError((o) => `cannot write ${o('toFile')} ${path} (${why})`, 'Give a writable file path')
  }
  try {
    if (existsSync(path)) {
      if (statSync(path).isDirectory()) fail('it is a directory')
      accessSync(path, constants.W_OK)
    } else {
      const dir = dirname(resolvePath(path))
      if (!existsSync(dir)) fail(`directory ${dir} does not exist`)
      accessSync(dir, constants.W_OK)
    }
  } catch (error) {
    if (error instanceof UsageError) throw error
    fail((error as NodeJS.ErrnoException).code ?? String(error))
  }
}

/** Appends (a rerun after a crash continues the same file); refuses a directory or an unwritable path. */
export async function openExport(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'a')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new UsageError((o) => `cannot write ${o('toFile')} ${path} (${code})`, 'Give a writable file path')
  }
}
