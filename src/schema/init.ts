// `outbox init`: the idempotent DDL plan, printed or applied.
import type {DdlOptions, DdlStatement, Dialect, PartitionInterval, TableNames} from '../../dialects/index.js'
import {raw, sql} from '../../dialects/sql.js'
import {createHash} from 'node:crypto'
import type {Db, Queryable} from '../db/index.js'
import {runUnderLock} from '../db/lock.js'
import {UsageError} from '../core/errors.js'
import {ARCHIVE_COLUMN_NAMES, EVENT_COLUMN_NAMES, INBOX_COLUMN_NAMES} from './columns.js'
import {initialRanges} from './partition-ranges.js'

export interface InitOptions extends Omit<DdlOptions, 'partitions'> {
  /** partition the outbox by created_at; its first ranges run from the current period to a week ahead */
  partitionBy?: PartitionInterval
}

/** init --partition-by on an outbox that exists unpartitioned: nothing done; `steps` migrate it. */
export class PartitionMigrationNeeded extends UsageError {
  constructor(
    table: string,
    readonly steps: string[],
  ) {
    super(`the outbox table ${table} exists and is not partitioned: init does not convert it`, 'Migrate it with the steps printed above (new table, copy, swap)')
  }
}

export interface AppliedStatement extends DdlStatement {
  status: 'created' | 'exists'
}

export interface InitResult {
  dialect: string
  upToDate: boolean
  statements: AppliedStatement[]
}

/** The DDL plan; a partitioned outbox's first ranges are laid out from `now` (the database clock where there is one). */
export function initPlan(dialect: Dialect, names: TableNames, options: InitOptions, now = new Date()): DdlStatement[] {
  const {partitionBy, ...ddl} = options
  if (!partitionBy) return dialect.ddl.statements(names, ddl)
  if (!dialect.ddl.partitioning) throw new UsageError(`${dialect.displayName} cannot partition the outbox`, 'Drop --partition-by, or use PostgreSQL or MySQL/MariaDB')
  return dialect.ddl.statements(names, {...ddl, partitions: initialRanges(now, partitionBy)})
}

/** The named lock `init --apply` and `partitions --ensure` take for one outbox table. */
export function initLockKey(dialect: Dialect, names: TableNames): string {
  return `outbox init ${createHash('sha1').update(dialect.render.table(names, 'outbox')).digest('hex').slice(0, 16)}`
}

/** The DDL as a script for the database's own client (repair-only statements left out: the tables' own DDL makes those). */
export function renderInitScript(dialect: Dialect, statements: DdlStatement[]): string {
  const header = `-- outbox schema for ${dialect.name}; every statement is idempotent (safe to run again)`
  return [header, ...statements.filter((s) => !s.repairOnly).map((s) => s.sql)].join('\n\n') + '\n'
}

/**
 * Creates what is missing (an index dropped from an existing table too), reports each object as
 * created or already there. Runs under the dialect's named lock, so parallel runs (a deploy's
 * replicas) do the work once and the others find it done.
 */
export async function applyInit(db: Db, names: TableNames, options: InitOptions): Promise<InitResult> {
  initPlan(db.dialect, names, options) // refuses --partition-by where the dialect cannot, before connecting further
  const key = initLockKey(db.dialect, names)
  return runUnderLock(db, {key, waitSeconds: 60, busy: 'another outbox init on these tables'}, async (tx) => {
    const [clock] = await tx.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`)
    let statements = initPlan(db.dialect, names, options, db.dialect.render.parseTime(clock.now) as Date)
    const before = await existing(tx, db.dialect, names)
    await checkShapes(tx, db.dialect, names, before)
    if (options.partitionBy && before.has(`table:${names.outbox}`)) {
      const partitioning = db.dialect.ddl.partitioning!
      if ((await tx.query(partitioning.list(names))).length === 0) {
        const create = statements.filter((s) => !s.repairOnly && (s.name === names.outbox || s.table === names.outbox)).map((s) => s.sql)
        throw new PartitionMigrationNeeded(names.outbox, partitioning.migration(names, create))
      }
      // partitioned already: adding ranges is `outbox partitions --ensure`'s (it moves rows out of the catch-all)
      statements = statements.filter((s) => s.kind !== 'partition')
    }
    const applied: AppliedStatement[] = []
    const created = new Set<string>()
    for (const statement of statements) {
      const key = `${statement.kind}:${statement.name}`
      if (before.has(key)) {
        applied.push({...statement, status: 'exists'})
        continue
      }
      // a repair statement's index came with its table, created in this run: reported, not run
      if (!(statement.repairOnly && created.has(`table:${statement.table}`))) await tx.execute(sql`${raw(statement.sql.replace(/;\s*$/, ''))}`)
      created.add(key)
      applied.push({...statement, status: 'created'})
    }
    return {dialect: db.dialect.name, upToDate: applied.every((s) => s.status === 'exists'), statements: applied}
  })
}

// the columns every command reads: a table by these names without them was made by something else
const EXPECTED_COLUMNS: Record<'outbox' | 'inbox' | 'archive', readonly string[]> = {
  outbox: EVENT_COLUMN_NAMES,
  archive: ARCHIVE_COLUMN_NAMES,
  inbox: INBOX_COLUMN_NAMES,
}

/** A table that exists already must have the outbox's columns: else one line naming it and what it lacks, before anything is created. */
async function checkShapes(q: Queryable, dialect: Dialect, names: TableNames, before: Set<string>): Promise<void> {
  const rows = await q.query<{table_name: string; column_name: string}>(dialect.ddl.existingColumns(names))
  for (const which of ['outbox', 'inbox', 'archive'] as const) {
    if (!before.has(`table:${names[which]}`)) continue
    const has = new Set(rows.filter((r) => String(r.table_name) === names[which]).map((r) => String(r.column_name).toLowerCase()))
    const missing = EXPECTED_COLUMNS[which].filter((c) => !has.has(c))
    if (missing.length > 0) {
      throw new UsageError(
        `the ${which} table ${names[which]} exists but has no ${missing.join(', ')} column${missing.length > 1 ? 's' : ''}: it was not made by outbox init`,
        `Point --${which === 'outbox' ? 'table' : `${which}-table`} at another name, or add the columns (outbox init --dialect ${dialect.name} prints the DDL)`,
      )
    }
  }
}

async function existing(q: Queryable, dialect: Dialect, names: TableNames): Promise<Set<string>> {
  const rows = await q.query<{kind: string; name: string}>(dialect.ddl.existingObjects(names))
  return new Set(rows.map((r) => `${r.kind}:${r.name}`))
}
