// postgres: SQLSTATE codes (and pg's own messages for a connection it lost) by meaning.
import type {ErrorsPart} from '../dialect.js'
import {classifier, errorFields} from '../shared.js'

const code = (error: unknown) => (error as {code?: string})?.code

export const errors: ErrorsPart = {
  classify: classifier({
    // 57P01-03: terminated by an administrator (pg_terminate_backend), crash, or shutdown
    lost: (e) => ['57P01', '57P02', '57P03'].includes(e.code) || /connection terminated|server closed the connection|terminating connection|not queryable/i.test(e.message),
    'too-many-connections': (e) => e.code === '53300' || /too many connections/i.test(e.message),
    // 57014 is both: statement_timeout's says so, any other is a cancel
    'statement-timeout': (e) => e.code === '57014' && /statement timeout/i.test(e.message),
    cancelled: (e) => e.code === '57014',
    login: (e) => e.code === '28P01' || e.code === '28000',
    'unknown-database': (e) => e.code === '3D000',
    'missing-table': (e) => e.code === '42P01',
    'missing-column': (e) => e.code === '42703',
  }),
  missingTable: (error) => /relation "([^"]+)"/i.exec(errorFields(error).message)?.[1],
  isLockTimeout: (error) => code(error) === '55P03',
  isDeadlock: (error) => code(error) === '40P01',
  isDuplicateKey: (error) => code(error) === '23505',
}
