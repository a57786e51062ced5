// The dialects' parts against the one list of columns (src/schema/columns.ts), their error
// classifiers, and how writeEvent tells the drivers' clients apart.
import {describe, expect, it} from 'vitest'
import {DIALECTS, ERROR_KINDS, type Dialect, type TableNames} from '../../dialects/index.js'
import {ARCHIVE_COLUMN_NAMES, CLAIMED_COLUMNS, EVENT_COLUMN_NAMES, INBOX_COLUMN_NAMES} from '../../src/schema/columns.js'
import {classifyDbError, describeDbError, isMissingTable} from '../../src/db/errors.js'
import {CHECKS} from '../../src/verify/run.js'

const names: TableNames = {outbox: 'ev', inbox: 'inb', archive: 'arc'}
const all = Object.values(DIALECTS)

/** The column names a CREATE TABLE defines, in order (keys and constraints left out). */
function createdColumns(dialect: Dialect, table: string): string[] {
  const statement = dialect.ddl.statements(names, {inbox: true, archive: true}).find((s) => s.kind === 'table' && s.name === table)
  const body = statement!.sql.slice(statement!.sql.indexOf('(\n') + 2, statement!.sql.lastIndexOf('\n)'))
  return body
    .split(',\n')
    .map((line) => line.trim())
    .filter((line) => !/^(PRIMARY KEY|KEY) /.test(line))
    .map((line) => line.split(' ')[0])
}

/** The names a select list gives its columns: `x AS name`, `alias.name` or `name`. */
function listedColumns(list: string): string[] {
  return list.split(', ').map((item) => (/ AS (\w+)$/.exec(item)?.[1] ?? item.split('.').pop()!))
}

/** The column list of the statement a claim returns its rows from. */
function claimedList(dialect: Dialect): string {
  const plan = dialect.relay.claim(names, {batch: 10, leaseMs: 1000, owner: 'o'})
  const text = dialect.render.compile(plan.kind === 'update-returning' ? plan.statement : plan.lock).text
  return plan.kind === 'update-returning' ? /RETURNING (.+)/.exec(text)![1] : /^SELECT (.+?) FROM /.exec(text)![1]
}

describe.each(all.map((d) => [d.name, d] as const))('%s has the schema\'s columns', (_name, dialect) => {
  it('in each CREATE TABLE, in order', () => {
    expect(createdColumns(dialect, 'ev')).toEqual(EVENT_COLUMN_NAMES)
    expect(createdColumns(dialect, 'arc')).toEqual(ARCHIVE_COLUMN_NAMES)
    expect(createdColumns(dialect, 'inb')).toEqual(INBOX_COLUMN_NAMES)
  })
  it('in the list its claim returns', () => {
    expect(listedColumns(claimedList(dialect))).toEqual(CLAIMED_COLUMNS)
  })
  it('skips only checks verify has', () => {
    const ids = CHECKS.map((c) => c.id)
    for (const id of Object.keys(dialect.verify.notApplicable)) expect(ids).toContain(id)
  })
})

describe('driver errors by meaning', () => {
  const cases: [Dialect, object, string | undefined][] = [
    [DIALECTS.postgres, {code: '57P01', message: 'terminating connection due to administrator command'}, 'lost'],
    [DIALECTS.postgres, {code: '53300', message: 'sorry, too many clients already'}, 'too-many-connections'],
    [DIALECTS.postgres, {code: '57014', message: 'canceling statement due to statement timeout'}, 'statement-timeout'],
    [DIALECTS.postgres, {code: '57014', message: 'canceling statement due to user request'}, 'cancelled'],
    [DIALECTS.postgres, {code: '28P01'}, 'login'],
    [DIALECTS.postgres, {code: '3D000'}, 'unknown-database'],
    [DIALECTS.postgres, {code: '42P01', message: 'relation "x" does not exist'}, 'missing-table'],
    [DIALECTS.postgres, {code: '42703'}, 'missing-column'],
    [DIALECTS.mysql, {code: 'PROTOCOL_CONNECTION_LOST', message: 'Connection lost: The server closed the connection.'}, 'lost'],
    // mysql2, a query sent on a connection the server had killed
    [DIALECTS.mysql, {message: "Can't add new command when connection is in closed state"}, 'lost'],
    [DIALECTS.mysql, {errno: 1226}, 'too-many-connections'],
    [DIALECTS.mysql, {errno: 1969}, 'statement-timeout'],
    [DIALECTS.mysql, {errno: 1317}, 'cancelled'],
    [DIALECTS.mysql, {code: 'ER_ACCESS_DENIED_ERROR', errno: 1045}, 'login'],
    [DIALECTS.mysql, {errno: 1046}, 'no-database'],
    [DIALECTS.mysql, {errno: 1049}, 'unknown-database'],
    [DIALECTS.mysql, {errno: 1146, sqlMessage: "Table 'db.x' doesn't exist"}, 'missing-table'],
    [DIALECTS.mysql, {errno: 1054}, 'missing-column'],
    [DIALECTS.sqlite, {code: 'SQLITE_ERROR', message: 'no such table: x'}, 'missing-table'],
    [DIALECTS.sqlite, {code: 'SQLITE_ERROR', message: 'table x has no column named y'}, 'missing-column'],
    [DIALECTS.sqlite, {code: 'SQLITE_CANTOPEN'}, 'cannot-open'],
    [DIALECTS.sqlite, {code: 'SQLITE_NOTADB'}, 'not-a-database'],
    // a lock wait or a network error is no kind of a dialect's own
    [DIALECTS.postgres, {code: '55P03'}, undefined],
    [DIALECTS.mysql, {code: 'ECONNREFUSED', errno: -111}, undefined],
    [DIALECTS.sqlite, {code: 'SQLITE_BUSY'}, undefined],
  ]
  it.each(cases.map(([d, error, kind]) => [d.name, JSON.stringify(error), kind, d, error] as const))('%s %s is %s', (_n, _e, kind, dialect, error) => {
    expect(dialect.errors.classify(error)).toBe(kind)
  })
  it('every kind is told apart by some dialect', () => {
    expect(new Set(cases.map(([, , kind]) => kind).filter(Boolean))).toEqual(new Set(ERROR_KINDS))
  })
  it('a missing table is named, and found without knowing the dialect', () => {
    expect(DIALECTS.postgres.errors.missingTable({message: 'relation "app.ev" does not exist'})).toBe('app.ev')
    expect(DIALECTS.mysql.errors.missingTable({sqlMessage: "Table 'db.arc' doesn't exist"})).toBe('arc')
    expect(DIALECTS.sqlite.errors.missingTable({message: 'no such table: main.ev'})).toBe('main.ev')
    expect(isMissingTable({code: 'ER_NO_SUCH_TABLE'})).toBe(true)
    expect(isMissingTable({code: 'SQLITE_ERROR', message: 'no such table: x'})).toBe(true)
    expect(isMissingTable({code: '42703'})).toBe(false)
    expect(classifyDbError({code: '42P01'})?.dialect).toBe(DIALECTS.postgres)
  })
  it('turns into the same line for the user whatever the database', () => {
    const archive = {table: 'ev', archive: 'arc'}
    expect(describeDbError({errno: 1146, sqlMessage: "Table 'db.arc' doesn't exist"}, 'mysql://u:pw@h/db', archive).message).toBe("the archive table arc does not exist (Table 'db.arc' doesn't exist)")
    expect(describeDbError({code: '42P01', message: 'relation "ev" does not exist'}, 'postgres://u:pw@h/db', archive).message).toBe('the outbox table ev does not exist (relation "ev" does not exist)')
    expect(describeDbError({code: 'SQLITE_NOTADB', message: 'file is not a database'}, 'sqlite:./x.db').message).toBe('sqlite:./x.db is not a SQLite database')
    expect(describeDbError({code: 'ECONNRESET', message: 'read ECONNRESET'}, 'postgres://u:pw@h/db').message).toMatch(/^lost the connection to the database at postgres:\/\/u:\*+@h\/db \(ECONNRESET\)/)
    expect(describeDbError({code: '28P01', message: 'password authentication failed for user "u"'}, 'postgres://u:pw@h/db').message).not.toContain('pw')
  })
})

describe('the drivers tell their own executors apart (writeEvent, Consumer)', () => {
  const fn = () => Promise.resolve()
  const owner = (executor: object) => all.flatMap((d) => {
    const found = d.driver.executor(executor)
    return found ? [[d.name, found.kind, found.sure] as const] : []
  })
  it('a pg client or Pool surely, a query/execute pair by guess, a better-sqlite3 Database, anything else not at all', () => {
    expect(owner({query: fn, escapeIdentifier: fn})).toEqual([['postgres', 'session', true]])
    expect(owner({query: fn, connect: fn, idleCount: 0})).toEqual([['postgres', 'pool', true]])
    expect(owner({query: fn, execute: fn})).toEqual([['mysql', 'session', false]])
    expect(owner({query: fn, execute: fn, getConnection: fn})).toEqual([['mysql', 'pool', false]])
    expect(owner({prepare: fn, pragma: fn})).toEqual([['sqlite', 'session', true]])
    expect(owner({query: fn})).toEqual([])
  })
  it('refuses a callback connection, whose failures reach nobody', () => {
    expect(() => owner({query: fn, execute: fn, promise: fn})).toThrow(/callback connection/)
  })
  it('knows Kysely\'s adapters by name', () => {
    const adapter = (name: string) => all.filter((d) => d.driver.kyselyAdapter.test(name)).map((d) => d.name)
    expect([adapter('PostgresAdapter'), adapter('MysqlAdapter'), adapter('SqliteAdapter')]).toEqual([['postgres'], ['mysql'], ['sqlite']])
  })
})
