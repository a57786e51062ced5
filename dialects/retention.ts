// RetentionPart: how `outbox archive` takes a whole range partition out of a partitioned outbox
// (dialects/partitions.ts) and drops it, or moves its rows to the archive table, instead of
// deleting it row by row. A retired partition sits in a table of its own between its detach and
// its drop, marked with a comment that says so and for what, so the run after a crash finds it
// and finishes the job (src/ops/archive-partitions.ts).
import type {TableNames} from './dialect.js'
import type {PartitionRange} from './partitions.js'
import type {Sql} from './sql.js'

export type RetireMode = 'move' | 'delete'

/** How a partition leaves the outbox, and why that way. */
export interface DetachWay {
  kind: 'detach-concurrently' | 'detach' | 'exchange'
  /** one line: the statement, and why not CONCURRENTLY where it is not */
  why: string
}

/** The comment a retired table carries: `outbox retired <mode> <partition> of <outbox>`. */
export function retiredComment(names: TableNames, mode: RetireMode, partition: string): string {
  return `outbox retired ${mode} ${partition} of ${names.outbox}`
}

/** The comment's ending that says which outbox a retired table came from (a LIKE pattern's tail). */
export function retiredOf(names: TableNames): string {
  return ` of ${names.outbox}`
}

/** The mode and the partition a retired table's comment names, or undefined. */
export function parseRetiredComment(comment: string | null | undefined): {mode: RetireMode; partition: string} | undefined {
  const m = /^outbox retired (move|delete) (\S+) of \S+$/.exec(comment ?? '')
  return m ? {mode: m[1] as RetireMode, partition: m[2]} : undefined
}

export interface RetentionPart {
  /** how this server takes a partition out, given whether the outbox has a catch-all partition */
  detachWay(hasCatchAll: boolean): DetachWay
  /**
   * {row_count, unpublished, failed, recent} of one attached partition (the name list() gave):
   * recent = published at or after `publishedBefore`. Any of the three keeps it in the outbox.
   */
  check(names: TableNames, partition: string, publishedBefore: Date): Sql
  /** the table a retired partition's rows sit in until they are dropped (unquoted) */
  retiredTable(names: TableNames, partition: string): string
  /**
   * The statements that take the partition out of the outbox into retiredTable, each run on
   * its own outside a transaction, in order: mark it first (the comment), then move it out
   * (one atomic statement). Run again after a crash between them, they must still work.
   */
  detach(names: TableNames, partition: string, mode: RetireMode, way: DetachWay): Sql[]
  /**
   * The retired tables of this outbox a run left behind: {name, comment, state}; state
   * 'detached' (out of the outbox, its rows still there), 'pending' (PostgreSQL: DETACH
   * CONCURRENTLY interrupted), 'attached' (marked, never taken out), 'staged' (MySQL: the
   * staging table exists, the exchange never ran: it is empty).
   */
  retired(names: TableNames): Sql
  /** PostgreSQL: completes a DETACH ... CONCURRENTLY that was interrupted */
  finalize?(names: TableNames, partition: string): Sql
  /** {event_type, n, kept}: a retired table's rows per type, `kept` the ones that must stay in the outbox */
  retiredRows(names: TableNames, retired: string, publishedBefore: Date): Sql
  /**
   * {n}: the rows written into the partition's range since it was taken out (a replay from the
   * archive, a late writer), where they sit: PostgreSQL: in the catch-all (`catchAll`; none:
   * undefined, such an insert fails); MySQL: in the partition itself, which EXCHANGE left empty.
   */
  landed(names: TableNames, partition: string, range: PartitionRange, catchAll: string | undefined): Sql | undefined
  /**
   * MySQL: the session's table locks on the outbox and the retired table, held from `landed`'s
   * count through drop or restore (DDL there commits at once: a transaction holds nothing), so no
   * row lands in the emptied partition between its count and its drop or exchange back. `lock`
   * waits a bounded time for them (a failure changes nothing: a rerun tries again); `unlock`
   * runs after it whatever happened, and puts back what `lock` changed on the session.
   */
  guard?: {lock(names: TableNames, retired: string): Sql[]; unlock: Sql[]}
  /**
   * Drops a retired table, and on MySQL the partition it left empty, unless `landed` rows sit
   * there now (kept, with the partition); run in the copy's transaction.
   */
  drop(names: TableNames, retired: string, partition: string, landed: number): Sql[]
  /** drops a retired table found empty; its partition, if still there, is the plan's to judge */
  discard(names: TableNames, retired: string): Sql
  /**
   * Puts a retired table's rows back where they came from (found holding rows that must stay),
   * clearing the mark, in one transaction (MySQL: under guard); with the `landed` rows that
   * were written into its range meanwhile, which stay in the outbox.
   */
  restore(names: TableNames, retired: string, partition: string, range: PartitionRange, landed: number, catchAll: string | undefined): Sql[]
  /** PostgreSQL: clears the mark of a partition that was never taken out (its comment) */
  unmark?(names: TableNames, partition: string): Sql
}
