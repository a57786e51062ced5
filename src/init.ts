// `outbox init`: the idempotent DDL plan, printed or applied.
import type {DdlOptions, DdlStatement, Dialect, TableNames} from '../dialects/index.js'
import {raw, sql} from '../dialects/index.js'
import type {Db} from './db/index.js'

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

/** The DDL as a script for the database's own client. */
export function renderInitScript(dialect: Dialect, statements: DdlStatement[]): string {
  const header = `-- outbox schema for ${dialect.name}; every statement is idempotent (safe to run again)`
  return [header, ...statements.map((s) => s.sql)].join('\n\n') + '\n'
}

/** Creates what is missing, reports each object as created or already there. */
export async function applyInit(db: Db, names: TableNames, options: InitOptions): Promise<InitResult> {
  const statements = initPlan(db.dialect, names, options)
  const before = await existing(db, names)
  const applied: AppliedStatement[] = []
  for (const statement of statements) {
    const key = `${statement.kind}:${statement.name}`
    if (before.has(key)) {
      applied.push({...statement, status: 'exists'})
      continue
    }
    await db.execute(sql`${raw(statement.sql.replace(/;\s*$/, ''))}`)
    applied.push({...statement, status: 'created'})
  }
  return {dialect: db.dialect.name, upToDate: applied.every((s) => s.status === 'exists'), statements: applied}
}

async function existing(db: Db, names: TableNames): Promise<Set<string>> {
  const rows = await db.query<{kind: string; name: string}>(db.dialect.existingObjects(names))
  return new Set(rows.map((r) => `${r.kind}:${r.name}`))
}
