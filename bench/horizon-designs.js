// The horizon suite's candidate designs on PostgreSQL, as SQL text: how each one publishes a
// chunk of events (today: the dialect's own mark; DELETE + insert into a published table), the
// claim with a low-water mark, and the mark's upkeep kept safe for producers that commit late.
import {DIALECTS} from './lib-under-test.js'

const pgRelay = DIALECTS.postgres.relay
export const CLAIM_OPTIONS = {batch: 100, leaseMs: 30_000, owner: 'bench-horizon'}

/** Today's claim, exactly as `outbox sql claim --dialect postgres` prints it (no trailing ;). */
export const todaysClaim = (names) => pgRelay.claimScript(names, CLAIM_OPTIONS).replace(/;\s*$/, '')

/** (a) today's claim, its index scan starting at the low-water mark `mark` (a timestamptz text). */
export function claimFromMark(names, mark) {
  const text = todaysClaim(names)
  const where = 'WHERE e.published_at IS NULL'
  if (!text.includes(where)) throw new Error('bench: the PostgreSQL claim no longer reads "WHERE e.published_at IS NULL"; update horizon-designs.js')
  return text.replace(where, `WHERE e.created_at >= '${mark}'::timestamptz AND e.published_at IS NULL`)
}

/**
 * (a)'s upkeep, step 1: no event can be pending below this bound but not yet visible. An
 * uncommitted INSERT holds ROW EXCLUSIVE on the table until its transaction ends, and its
 * created_at (clock_timestamp() at the insert) is after its transaction's start; a writer that
 * has not inserted yet will date its event after now(). A holder whose start cannot be read
 * gives no bound (-infinity, a full scan): a prepared transaction (no backend), or a session
 * of another role when the relay's lacks pg_read_all_stats (pg_stat_activity hides its
 * xact_start). Read BEFORE step 2's snapshot, so a
 * writer committing in between is either still listed here or visible there.
 */
export const writersBound = (names) => `SELECT CASE WHEN bool_or(l.locktype IS NOT NULL AND a.xact_start IS NULL) THEN '-infinity'::timestamptz
  ELSE least(now(), min(a.xact_start)) END::text AS bound
FROM (SELECT 1) one
LEFT JOIN pg_locks l ON l.locktype = 'relation' AND l.relation = '${names.outbox}'::regclass AND l.mode = 'RowExclusiveLock' AND l.pid IS DISTINCT FROM pg_backend_pid()
LEFT JOIN pg_stat_activity a ON a.pid = l.pid`

/**
 * (a)'s upkeep, step 2 (a new statement, a new snapshot): the new mark is the oldest pending
 * event at or after the old mark (leased and retrying ones included: they are pending), or the
 * bound when that is older. The scan walks only what was published since the old mark.
 */
export const nextMark = (names, oldMark, bound) => `SELECT least('${bound}'::timestamptz, (
  SELECT min(created_at) FROM ${names.outbox}
  WHERE created_at >= '${oldMark}'::timestamptz AND published_at IS NULL AND failed_at IS NULL
))::text AS mark`

/** The naive mark (the oldest pending event this snapshot sees), which a late commit defeats. */
export const naiveMark = (names) => `SELECT min(created_at)::text AS mark FROM ${names.outbox} WHERE published_at IS NULL AND failed_at IS NULL`

/** Inserts `count` pending events (created_at increasing); returns ids and the first created_at. */
export const insertPending = (names, count) => `WITH ins AS (
  INSERT INTO ${names.outbox} (id, event_type, aggregate_id, payload)
  SELECT gen_random_uuid(), 'order.created', 'order-' || i, jsonb_build_object('n', i) FROM generate_series(1, ${count}) AS i
  RETURNING id, created_at
) SELECT array_agg(id) AS ids, min(created_at)::text AS first FROM ins`

/** The claim's lease on given rows (lease columns are in no index: a HOT update, as the claim's). */
export const lease = (names) => `UPDATE ${names.outbox} SET lease_owner = 'bench-horizon', lease_until = now() + interval '30 s', attempts = attempts + 1 WHERE id = ANY($1::uuid[])`

/** Today's mark, from the dialect (`outbox sql` prints the same). */
export const markToday = (names, ids) => pgRelay.markPublished(names, ids)

/** (c): the published events leave the outbox for a table of their own, in one statement. */
export const moveToPublished = (names) => `WITH d AS (DELETE FROM ${names.outbox} WHERE id = ANY($1::uuid[]) RETURNING *)
INSERT INTO ${names.outbox}_published (id, event_type, aggregate_id, payload, created_at, attempts, published_at)
SELECT id, event_type, aggregate_id, payload, created_at, attempts, now() FROM d`

const compiled = (fragment) => DIALECTS.postgres.render.compile(fragment)

/** The shipped relay's claim from a mark: the dialect's own statement (ClaimOptions.from), as the relay binds it. */
export const shippedClaim = (names, mark) => compiled(pgRelay.claim(names, {...CLAIM_OPTIONS, from: mark}).statement)

/** The shipped relay's next mark: the dialect's writers bound, then its next() from `oldMark`. */
export async function shippedMark(client, names, oldMark) {
  const bound = compiled(pgRelay.claimMark.writersBound(names))
  const {rows} = await client.query(bound.text, bound.params)
  const next = compiled(pgRelay.claimMark.next(names, oldMark, rows[0].bound))
  return (await client.query(next.text, next.params)).rows[0].mark
}
