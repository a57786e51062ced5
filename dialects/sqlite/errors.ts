// sqlite: better-sqlite3's SQLITE_* codes, and SQLite's messages for a missing table or column.
import type {ErrorsPart} from '../dialect.js'
import {classifier, errorFields} from '../shared.js'

const code = (error: unknown) => (error as {code?: string})?.code

export const errors: ErrorsPart = {
  classify: classifier({
    'missing-table': (e) => /no such table/i.test(e.message),
    'missing-column': (e) => /no such column|has no column/i.test(e.message),
    'cannot-open': (e) => e.code === 'SQLITE_CANTOPEN' || /unable to open database|cannot open database/i.test(e.message),
    'not-a-database': (e) => e.code === 'SQLITE_NOTADB' || /file is not a database/i.test(e.message),
  }),
  missingTable: (error) => /no such table: (\S+)/i.exec(errorFields(error).message)?.[1],
  isLockTimeout: (error) => /^SQLITE_BUSY/.test(String(code(error) ?? '')),
  isDeadlock: () => false,
  isDuplicateKey: (error) => code(error) === 'SQLITE_CONSTRAINT_PRIMARYKEY',
}
