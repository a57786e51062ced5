// The batch loop replay and archive share: keyset pagination over (created_at, id), each
// batch its own short transaction, so no lock is held for longer than one batch and rows a
// batch skipped are never scanned again. What one batch does is the caller's (batch-rows.ts,
// batch-one-statement.ts, batch-summarised.ts); the loop keeps the cursor, the progress, the
// stop signal and what a run needs around its batches (the plan's runSetting and relaxedCommit).
import type {Db, Queryable} from '../db/index.js'
import {nextTurn} from '../core/event-loop.js'
import type {Cursor} from './query.js'

export interface Progress {
  /** rows examined so far */
  seen: number
  /** rows changed so far */
  changed: number
  batches: number
  /** the loop stopped early because `signal` was aborted (the batch in flight was committed first) */
  interrupted?: boolean
}

export interface BatchOptions {
  size: number
  onProgress?: (p: Progress) => void
  /** checked between batches: once aborted, no new batch starts (SIGTERM, --timeout) */
  signal?: AbortSignal
}

/** What one batch did: rows read, rows changed, and the cursor the next batch starts after (none: stop). */
export interface BatchDone {
  seen: number
  changed: number
  cursor?: Cursor
}

/**
 * Runs `batch` until the selection is done: before each batch it honours `signal`; after each
 * non-empty one it adds up and reports progress; it stops on an empty or short batch (fewer
 * than `size` rows), or one that gives no cursor to go on from. `batch` gets the previous
 * batch's cursor (undefined for the first). All of it inside batchRun.
 */
export async function batchLoop(db: Db, options: BatchOptions, batch: (cursor: Cursor | undefined) => Promise<BatchDone>): Promise<Progress> {
  return batchRun(db, async () => {
    const progress: Progress = {seen: 0, changed: 0, batches: 0}
    let cursor: Cursor | undefined
    for (;;) {
      if (await stopRequested(options, progress)) break
      const done = await batch(cursor)
      if (done.seen === 0) break
      progress.seen += done.seen
      progress.changed += done.changed
      progress.batches++
      cursor = done.cursor
      options.onProgress?.({...progress})
      if (done.seen < options.size || !cursor) break
    }
    return progress
  })
}

/**
 * What a whole run of batches needs around its loop: the plan's runSetting, put back to the
 * value found whatever happens, and, after a loop that ends normally (done or interrupted),
 * flushBatches and the setting's `settle`.
 */
async function batchRun(db: Db, loop: () => Promise<Progress>): Promise<Progress> {
  const setting = db.dialect.batches.plan.runSetting
  const [row] = setting ? await db.query(setting.read) : []
  const before = Number(Object.values(row ?? {})[0])
  const restore = () => (setting && Number.isSafeInteger(before) ? db.execute(setting.set(before)) : Promise.resolve(0))
  if (setting) await db.execute(setting.set(setting.during))
  let progress: Progress
  try {
    progress = await loop()
    await flushBatches(db, progress)
  } catch (error) {
    await restore().catch(() => {}) // the loop's error is the one to report
    throw error
  }
  await restore()
  // like flushBatches: a run that committed no batch has nothing of its own to settle
  if (setting?.settle && progress.batches > 0) await db.query(setting.settle)
  return progress
}

/** One batch's transaction; where the plan relaxes batch commits, it commits without waiting for the disk (see flushBatches). */
export function batchTransaction<T>(db: Db, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const relaxed = db.dialect.batches.plan.relaxedCommit
  if (!relaxed) return db.transaction(fn)
  return db.transaction(fn, {first: relaxed.relax})
}

/** After the last batch (or an interruption): one commit that waits for the disk makes every batch before it durable. */
async function flushBatches(db: Db, progress: Progress): Promise<void> {
  const relaxed = db.dialect.batches.plan.relaxedCommit
  if (relaxed && progress.batches > 0) await db.query(relaxed.flush)
}

async function stopRequested(options: BatchOptions, progress: Progress): Promise<boolean> {
  await nextTurn() // so a signal or --timeout is seen between SQLite batches too
  if (!options.signal?.aborted) return false
  progress.interrupted = true
  return true
}

/** A changing statement by range touched a different number of rows than the locked batch: roll the batch back. */
export function expectBatch(changed: number, expected: number): number {
  if (changed !== expected) throw new Error(`the batch changed ${changed} rows where it had locked ${expected} (rows entered its range meanwhile); it was rolled back, rerun`)
  return changed
}
