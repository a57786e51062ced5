// mysql: what `outbox verify` asks of a MySQL or MariaDB server, and reads from ANALYZE FORMAT=JSON.
import type {VerifyPart} from '../dialect.js'
import {raw, sql} from '../sql.js'
import {table} from './render.js'

export const verify: VerifyPart = {
  serverVersion: () => sql`SELECT VERSION() AS version`,
  supportsSkipLocked,
  claimSupport: (version) => {
    const product = isMariaDb(version) ? 'MariaDB' : 'MySQL'
    const needs = isMariaDb(version) ? '10.6+' : '8.0.1+'
    return supportsSkipLocked(version)
      ? {ok: true, detail: `${product} ${version}: SELECT ... FOR UPDATE SKIP LOCKED supported (${needs})`}
      : {
          ok: false,
          detail: `${product} ${version} has no SKIP LOCKED (needs ${needs}): concurrent relays would wait on each other's rows or claim nothing. Upgrade the server`,
        }
  },
  concurrency: 'skip-locked',
  // every check applies: InnoDB's sort locks every pending row, and its gap locks can block a producer
  notApplicable: {},
  // Whole seconds, at least 1: the variable takes no fractions.
  lockTimeout: (ms) => sql`SET SESSION innodb_lock_wait_timeout = ${raw(String(Math.max(1, Math.ceil(ms / 1000))))}`,
  // MySQL 8 removed tx_isolation; MariaDB 10.11 has only tx_isolation.
  isolationLevel: (version) => sql`SELECT ${raw(isMariaDb(version) ? '@@tx_isolation' : '@@transaction_isolation')} AS level`,
  notReadCommitted: 'gap locks would block producers. The relay sets it per connection; check nothing overrides it',
  explain: (statement) => sql`EXPLAIN ${statement}`,
  // MariaDB's; MySQL 8's EXPLAIN ANALYZE prints a text tree instead
  analyzeRows: {
    statement: (statement) => sql`ANALYZE FORMAT=JSON ${statement}`,
    rowsRead: (result, name) => {
      let rows = 0
      const text = String(Object.values(result[0] ?? {})[0] ?? '{}')
      JSON.parse(text, (_key, value) => {
        if (value?.table_name === name) rows += Number(value.r_rows ?? 0) * Number(value.r_loops ?? 0)
        return value
      })
      return rows
    },
  },
  analyze: (names) => sql`ANALYZE TABLE ${raw(table(names, 'outbox'))}`,
  dropOutbox: (names) => sql`DROP TABLE IF EXISTS ${raw(table(names, 'outbox'))}`,
}

function isMariaDb(version: string): boolean {
  return /mariadb/i.test(version)
}

function supportsSkipLocked(version: string): boolean {
  const [major, minor, patch] = version.split(/[.-]/).map(Number)
  if (isMariaDb(version)) return major > 10 || (major === 10 && minor >= 6)
  return major > 8 || (major === 8 && (minor > 0 || patch >= 1))
}
