// postgres: what `outbox verify` asks of the server, and reads from EXPLAIN (ANALYZE).
import type {VerifyPart} from '../dialect.js'
import {raw, sql} from '../sql.js'
import {table} from './render.js'

export const verify: VerifyPart = {
  serverVersion: () => sql`SELECT current_setting('server_version') AS version`,
  supportsSkipLocked,
  claimSupport: (version) =>
    !supportsSkipLocked(version)
      ? {ok: false, detail: `PostgreSQL ${version} has no FOR UPDATE SKIP LOCKED (needs 9.5+): relays would wait on each other's rows. Upgrade the server`}
      : !supportsMaterialized(version)
        ? {ok: false, detail: `PostgreSQL ${version} has no WITH ... AS MATERIALIZED (needs 12+), which the claim and archive's batches are written with. Upgrade the server`}
        : {ok: true, detail: `PostgreSQL ${version}: FOR UPDATE SKIP LOCKED (9.5+) and WITH ... AS MATERIALIZED (12+) supported`},
  concurrency: 'skip-locked',
  notApplicable: {index: 'PostgreSQL locks only the rows it returns: a sort costs time, not concurrency'},
  lockTimeout: (ms) => sql`SET LOCAL lock_timeout = ${raw(`'${positiveMs(ms)}ms'`)}`,
  isolationLevel: () => sql`SELECT current_setting('transaction_isolation') AS level`,
  notReadCommitted: 'a changed locked row becomes an error. Check default_transaction_isolation',
  explain: (statement) => sql`EXPLAIN ${statement}`,
  analyzeRows: {
    statement: (statement) => sql`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`,
    rowsRead: (result, name) =>
      planNodes(result[0]?.['QUERY PLAN'])
        .filter((node) => node['Relation Name'] === name)
        .reduce((n, node) => n + rowsSeen(node) * count(node['Actual Loops']), 0),
  },
  analyze: (names) => sql`ANALYZE ${raw(table(names, 'outbox'))}`,
  dropOutbox: (names) => sql`DROP TABLE IF EXISTS ${raw(table(names, 'outbox'))}`,
}

function supportsSkipLocked(version: string): boolean {
  const [major, minor] = version.split(/[.\s]/).map(Number)
  return major > 9 || (major === 9 && minor >= 5)
}

/** WITH ... AS MATERIALIZED arrived in 12; earlier servers refuse the keyword (their CTEs always materialise). */
function supportsMaterialized(version: string): boolean {
  return Number(version.split(/[.\s]/)[0]) >= 12
}

/** SET takes no bound parameters, so the value is inlined: a validated integer only. */
function positiveMs(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 1) throw new RangeError(`invalid lock timeout ${ms}`)
  return ms
}

type PlanNode = Record<string, unknown> & {Plans?: PlanNode[]}

/** Every node of EXPLAIN (FORMAT JSON)'s plan tree (pg parses the json column already). */
function planNodes(plan: unknown): PlanNode[] {
  const roots = (typeof plan === 'string' ? JSON.parse(plan) : (plan ?? [])) as {Plan: PlanNode}[]
  const out: PlanNode[] = []
  const walk = (node: PlanNode) => {
    out.push(node)
    for (const child of node.Plans ?? []) walk(child)
  }
  for (const root of roots) walk(root.Plan)
  return out
}

/** rows a scan node returned and those its filters threw away, per loop */
function rowsSeen(node: PlanNode): number {
  return count(node['Actual Rows']) + count(node['Rows Removed by Filter']) + count(node['Rows Removed by Index Recheck'])
}

function count(value: unknown): number {
  return typeof value === 'number' ? value : 0
}
