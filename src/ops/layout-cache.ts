// The partition layout as status reads it on every report (partitionsAhead): kept per Db and
// table with the catalog versions it was read at (PartitioningPart.versions), and read again only
// when they change. Reading the bounds deparses every partition's (PostgreSQL: about 1 ms for 39
// partitions); the versions are a plain catalog read. One round trip either way.
import type {TableNames} from '../../dialects/index.js'
import {UsageError} from '../core/errors.js'
import type {Db, Row} from '../db/index.js'
import {layoutOf, type PartitionLayout} from './partitions.js'

interface Known {
  version: string
  layout: PartitionLayout | undefined
}

const known = new WeakMap<Db, Map<string, Known>>()

/** the versions of list()'s or versions()'s rows, in one text, whatever their order */
const versionOf = (rows: Row[]) => rows.map((r) => String(r.version)).sort().join(',')

/**
 * The layout without sizes (measuring them stats every partition's files on PostgreSQL), or
 * undefined when the table is not partitioned, or not as outbox init lays it out: that is
 * `outbox partitions`'s to report, not status's to fail on.
 */
export async function statusLayout(db: Db, names: TableNames): Promise<PartitionLayout | undefined> {
  const partitioning = db.dialect.ddl.partitioning
  if (!partitioning) return undefined
  const prepare = {prepare: db.dialect.batches.prepareReads}
  const key = `${names.schema ?? ''}.${names.outbox}`
  const tables = known.get(db) ?? new Map<string, Known>()
  known.set(db, tables)
  const last = tables.get(key)
  if (last && partitioning.versions && versionOf(await db.query(partitioning.versions(names), prepare)) === last.version) return last.layout
  const rows = await db.query(partitioning.list(names, false), prepare)
  const layout = asStatusReads(() => layoutOf(rows, db.dialect, names))
  if (partitioning.versions) tables.set(key, {version: versionOf(rows), layout})
  return layout
}

function asStatusReads(read: () => PartitionLayout | undefined): PartitionLayout | undefined {
  try {
    return read()
  } catch (error) {
    if (error instanceof UsageError) return undefined
    throw error
  }
}
