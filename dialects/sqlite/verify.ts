// sqlite: what `outbox verify` asks of SQLite, which has no row locks: one writer at a time.
import type {VerifyPart} from '../dialect.js'
import {raw, sql} from '../sql.js'
import {table} from './render.js'

export const verify: VerifyPart = {
  serverVersion: () => sql`SELECT sqlite_version() AS version`,
  supportsSkipLocked: () => false,
  // No row locks: one writer at a time, and the claim is one UPDATE ... RETURNING (3.35+).
  claimSupport: (version) => {
    const [major, minor] = version.split('.').map(Number)
    const ok = major > 3 || (major === 3 && minor >= 35)
    return ok
      ? {ok, detail: `SQLite ${version}: no SKIP LOCKED (not needed: one writer at a time); UPDATE ... RETURNING supported (3.35+)`}
      : {ok, detail: `SQLite ${version} has no UPDATE ... RETURNING (needs 3.35+). Upgrade better-sqlite3`}
  },
  concurrency: 'single-writer',
  notApplicable: {
    isolation: 'SQLite: one writer at a time, transactions are serializable',
    index: 'SQLite has no row locks: a sort costs time, not concurrency',
    producer: 'SQLite has one writer: a producer waits for the claim transaction to commit (milliseconds)',
  },
  urlProblem: (url) =>
    /^sqlite3?::memory:/i.test(url) ? {message: 'verify needs a SQLite file: sqlite::memory: is private to one connection', hint: 'Use sqlite:./app.db'} : undefined,
  lockTimeout: () => undefined,
  isolationLevel: () => undefined,
  explain: (statement) => sql`EXPLAIN QUERY PLAN ${statement}`,
  analyze: (names) => sql`ANALYZE ${raw(table(names, 'outbox'))}`,
  dropOutbox: (names) => sql`DROP TABLE IF EXISTS ${raw(table(names, 'outbox'))}`,
}
