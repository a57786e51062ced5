// mysql: MySQL/MariaDB error numbers (and mysql2's codes for a connection it lost) by meaning.
import type {ErrorsPart} from '../dialect.js'
import {classifier, errorFields} from '../shared.js'

const LOST_CODES = ['PROTOCOL_CONNECTION_LOST', 'ER_CONNECTION_KILLED', 'CR_SERVER_LOST', 'CR_SERVER_GONE_ERROR']
const errno = (error: unknown) => (error as {errno?: number})?.errno

export const errors: ErrorsPart = {
  classify: classifier({
    // KILL = 1927; 2006 gone away, 2013 lost during a query; mysql2's "closed state": a query sent
    // on a connection the server already closed (KILL), in 2 of 3 tries here
    lost: (e) => LOST_CODES.includes(e.code) || [1927, 2006, 2013].includes(e.errno) || /connection lost|server closed the connection|connection is in closed state/i.test(e.message),
    // 1040 the server's max_connections; 1203 / 1226 the user's own limit
    'too-many-connections': (e) => [1040, 1203, 1226].includes(e.errno) || /too many connections/i.test(e.message),
    // MariaDB 1969 max_statement_time, MySQL 3024 max_execution_time
    'statement-timeout': (e) => [1969, 3024].includes(e.errno),
    // KILL QUERY
    cancelled: (e) => e.errno === 1317,
    login: (e) => e.code === 'ER_ACCESS_DENIED_ERROR' || e.errno === 1045,
    'no-database': (e) => e.code === 'ER_NO_DB_ERROR' || e.errno === 1046,
    'unknown-database': (e) => e.code === 'ER_BAD_DB_ERROR' || e.errno === 1049,
    'missing-table': (e) => e.code === 'ER_NO_SUCH_TABLE' || e.errno === 1146,
    'missing-column': (e) => e.code === 'ER_BAD_FIELD_ERROR' || e.errno === 1054,
  }),
  // Table 'db.x' doesn't exist
  missingTable: (error) => /Table '(?:[^'.]+\.)?([^']+)'/i.exec(errorFields(error).message)?.[1],
  isLockTimeout: (error) => errno(error) === 1205,
  isDeadlock: (error) => errno(error) === 1213,
  isDuplicateKey: (error) => errno(error) === 1062,
}
