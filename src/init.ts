// `outbox init`: the idempotent DDL plan, printed or applied.
import type {DdlOptions, DdlStatement, Dialect, TableNames} from '../dialects/index.js'
import {raw, sql} from '../dialects/index.js'
import {createHash} from 'node:crypto'
import type {Db, Queryable} from './db/index.js'
import {ConnectionError} from './errors.js'

export interface InitOptions extends DdlOptions {}

export interface AppliedStatement extends DdlStatement {
  status: 'created' | 'exists'
}

export interface InitResult {
  dialect: string
  upToDate: boolean
  statements: AppliedStatement[]
}

export function initPlan(dialect: Dialect, names: TableNames, options: InitOptions): DdlStatement[] {
  return dialect.ddl(names, options)
}

/** The DDL as a script for the database's own client (repair-only statements left out: the tables' own DDL makes those). */
export function renderInitScript(dialect: Dialect, statements: DdlStatement[]): string {
  const header = `-- outbox schema for ${dialect.name}; every statement is idempotent (safe to run again)`
  return [header, ...statements.filter((s) => !s.repairOnly).map((s) => s.sql)].join('\n\n') + '\n'
}

/**
 * Creates what is missing (an index dropped from an existing table too), reports each object as
 * created or already there. Runs under the dialect's initLock, so parallel runs (a deploy's
 * replicas) do the work once and the others find it done.
 */
export async function applyInit(db: Db, names: TableNames, options: InitOptions): Promise<InitResult> {
  const statements = initPlan(db.dialect, names, options)
  const lock = db.dialect.initLock
  const lockKey = `outbox init ${createHash('sha1').update(db.dialect.table(names, 'outbox')).digest('hex').slice(0, 16)}`
  return db.transaction(async (tx) => {
    if (lock) {
      const [row] = await tx.query(lock.take(lockKey))
      if (row && Number(row.got) === 0) throw new ConnectionError('another outbox init on these tables held its lock for 60 s', 'Run it again once that one is done')
    }
    try {
      const before = await existing(tx, db.dialect, names)
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
    } finally {
      if (lock?.release) await tx.query(lock.release(lockKey))
    }
  })
}

async function existing(q: Queryable, dialect: Dialect, names: TableNames): Promise<Set<string>> {
  const rows = await q.query<{kind: string; name: string}>(dialect.existingObjects(names))
  return new Set(rows.map((r) => `${r.kind}:${r.name}`))
}
