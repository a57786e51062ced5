// Deliberately broken claims, built from the dialect's own plan, so the tests can show that
// verify and the concurrency tests fail when the claim is wrong.
import {raw, sql, Sql, type ClaimOptions, type ClaimPlan, type Dialect, type TableNames} from '../../dialects/index.js'

type PlanFn = (names: TableNames, options: ClaimOptions) => ClaimPlan

function mapText(s: Sql, f: (text: string) => string): Sql {
  return new Sql(s.chunks.map(f), s.values)
}

function mapPlan(plan: ClaimPlan, f: (text: string) => string): ClaimPlan {
  if (plan.kind === 'update-returning') return {...plan, statement: mapText(plan.statement, f)}
  return {...plan, lock: mapText(plan.lock, f), update: (ids, createdAt) => mapText(plan.update(ids, createdAt), f)}
}

function edited(dialect: Dialect, f: (text: string, names: TableNames) => string): PlanFn {
  return (names, options) => {
    const plan = dialect.relay.claim(names, options)
    const out = mapPlan(plan, (text) => f(text, names))
    if (JSON.stringify(out) === JSON.stringify(plan)) throw new Error('the edit did not change the claim')
    return out
  }
}

/** waits on locked rows instead of skipping them */
export const withoutSkipLocked = (dialect: Dialect) => edited(dialect, (t) => t.replace(/\s+SKIP LOCKED/, ''))

/** ignores live leases: every claimer takes the same rows */
export const ignoringLeases = (dialect: Dialect) => edited(dialect, (t) => t.replace(/\(e\.lease_until IS NULL OR e\.lease_until < [^)]*\)\)?/, '1 = 1'))

/** MySQL/MariaDB: the claim may not use an index, so it sorts (and locks) every pending row */
export const withoutIndex = (dialect: Dialect) =>
  edited(dialect, (t, names) => t.replace(/(FROM \S+ e)( FORCE INDEX \([^)]*\))?\n/, `$1 IGNORE INDEX (${names.outbox}_claim_idx, ${names.outbox}_created_at_idx)\n`))

/**
 * PostgreSQL: the article's form, `UPDATE ... WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP
 * LOCKED)`. Under a nested loop the subquery re-runs per row and skips what it already locked.
 */
export const articleClaim: PlanFn = (names, options) => {
  const t = raw(`"${names.outbox}"`)
  return {
    kind: 'update-returning',
    ordered: false,
    statement: sql`UPDATE ${t} SET lease_owner = ${options.owner}, lease_until = now() + interval '1 minute', attempts = attempts + 1
WHERE id IN (SELECT e.id FROM ${t} e WHERE e.published_at IS NULL AND e.failed_at IS NULL AND (e.lease_until IS NULL OR e.lease_until < now())
  ORDER BY e.created_at, e.id LIMIT ${raw(String(options.batch))} FOR UPDATE SKIP LOCKED)
RETURNING id, event_type, aggregate_type, aggregate_id, aggregate_version, payload::text AS payload, headers::text AS headers, created_at, attempts`,
  }
}

/**
 * PostgreSQL session settings that give the plan stale statistics lead to: a nested loop with
 * the subquery rescanned per outer row (BUG #15715).
 */
export const NESTED_LOOP_SETTINGS = ['enable_hashjoin', 'enable_mergejoin', 'enable_material', 'enable_sort', 'enable_memoize', 'enable_hashagg'].map(
  (s) => sql`${raw(`SET ${s} = off`)}`,
)

/** drops the mark a claim carries: the relay's one commit per batch would never mark anything */
export const forgettingTheMark = (dialect: Dialect): PlanFn => (names, options) => dialect.relay.claim(names, {...options, mark: undefined})
