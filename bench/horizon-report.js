// The horizon suite's markdown: one row per N, how the figures were taken, the late-commit
// check of design (a)'s mark rule, and the recommendation the figures support.
import {fmt} from './lib.js'

// the index the pick read, short: the table's name is a random tag
const tag = (index) =>
  String(index ?? '')
    .split(', ')
    .map((name) => name.replace(/^b_[a-z]+_[0-9a-f]{6}_/, '').replace(/_idx$/, ''))
    .join(' or ')
// the shipped claim's two plans (older runs' JSON has no such column)
const shipped = (m) => (m ? `${cell(m.custom)}; ${cell(m.generic)}` : '-')
const cell = (m) => `${fmt(m.buffers, 0)} (${fmt(m.scanBuffers, 0)} ${tag(m.index)}) / ${fmt(m.ms, 2)}`

export function horizonMarkdown({quick, results, late, mariadb, head, lag, chunk, repeats}) {
  const rows = results.map(
    (r) =>
      `| ${r.n.toLocaleString('en')} | ${cell(r.held.today)} | ${cell(r.held.fromMark)} | ${shipped(r.held.shipped)} | ${fmt(r.held.markUpkeep.buffers, 0)} / ${fmt(r.held.markUpkeep.ms, 2)} | ${fmt(r.held.writersBound.ms, 2)} | ${cell(r.held.moved)} | ${cell(r.vacuumed.today)} | ${cell(r.vacuumed.moved)} | ${cell(r.noPartial)} |`,
  )
  const biggest = results.at(-1)
  const ratio = biggest.held.today.buffers / Math.max(1, biggest.held.fromMark.buffers + biggest.held.markUpkeep.buffers / 10)
  return [
    quick ? '**Quick run**: N = 2,000 and 10,000 only.\n' : '',
    `How: a fresh outbox table (\`outbox init\`'s DDL) per design. One session runs \`BEGIN; SELECT txid_current()\` and stays open; N events are then published the way the design does it, ${chunk} per statement: inserted pending, leased (the claim's HOT update of the lease columns), then settled — today: the dialect's own mark (\`UPDATE ... SET published_at = now() ...\`, as \`outbox sql\` prints it); (c): \`DELETE ... RETURNING\` into a published table. ${head.toLocaleString('en')} pending events are added in front of the claim and the table ANALYZEd. Each figure is the claim (batch 100, exactly \`outbox sql claim --dialect postgres --claim-from start\`; (a) adds \`e.created_at >= mark\` to its WHERE as a literal; "the shipped relay's claim" is the dialect's claim with \`ClaimOptions.from\`, as the relay runs it: a prepared statement with the mark bound, the mark computed by the dialect's own two statements from the same old mark as the upkeep column, under \`EXPLAIN EXECUTE\` with PostgreSQL's custom plan and with \`plan_cache_mode = force_generic_plan\`, the plan a prepared statement may settle on, which cannot see the mark's value) under \`EXPLAIN (ANALYZE, BUFFERS)\` in a transaction rolled back, median of ${repeats} runs: shared buffers hit + read / execution ms. Buffers do not depend on the machine's load; ms are this run's on a shared, loaded machine. "vacuumed": the held session rolled back, then \`VACUUM\`, then the same claim. Reproduce: \`npm run bench -- horizon\`.`,
    '',
    '| N published under the held xid | today (partial pending index) | (a) from the low-water mark | the shipped relay\'s claim from its mark: custom plan; generic plan | (a) mark upkeep: next mark, ' + lag.toLocaleString('en') + ' published since the last | (a) writers bound, ms | (c) DELETE + insert into a published table | today, vacuumed | (c), vacuumed | (b) without the partial index (plain created_at index), vacuumed |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `Cells: the claim's buffers (those of its pick's scan, and the index the planner chose for it: pending = the partial pending index, created_at = the plain one) / ms; the rest of a claim's buffers are its row locks and the lease UPDATE of its 100 rows, the same for every design. Dead tuples when measured (pg_stat_user_tables): ${results.map((r) => `N ${r.n.toLocaleString('en')}: today ${r.deadTuples.today ?? '-'}, (c) ${r.deadTuples.moved ?? '-'}`).join('; ')}.`,
    '',
    ...shippedLine(results),
    ...mariadbTable(mariadb, head, chunk, repeats),
    '',
    `**Late-commit check of (a)'s mark rule** (a producer inserts an event, keeps its transaction open while 100 later events commit, then commits): the naive mark (the oldest pending event the relay can see) ${late.naiveSkips ? '**passes the late event** and would never claim it' : 'did not pass the late event this time'}; the rule (step 1: \`least(now(), min(xact_start))\` of the sessions holding ROW EXCLUSIVE on the outbox, read from pg_locks before step 2's snapshot; step 2: the oldest pending event at or after the old mark, or that bound if older) ${late.markKeeps ? 'kept the mark at or below it' : '**passed it**'}, and the claim from that mark ${late.claimedAfterCommit ? 'returned it after the commit' : '**did not return it**'}.`,
    '',
    '**What the figures say.** (b) is what ships: the claim already reads a partial index of pending rows (the last column shows what it saves once vacuum can work). It does not help under a held horizon: marking a row published takes it out of the partial index only for new index entries; its old entry stays, pointing at a version the held snapshot may still need, so every claim walks every entry published since the xid was taken and visits its heap page. (c) leaves the same dead entries (a DELETE removes nothing from an index either) and costs a second table. Only (a) skips them: the index scan starts at the mark, so its cost is the batch plus what was published since the mark last moved, and stays flat however long the xid is held. (With the mark, the planner may read the plain created_at index instead of the pending one: the same entries from the mark on, the same cost.) A side finding: the plan of the pick follows the statistics; with many pending events (a backlog) it can choose the plain created_at index (an incremental sort) or a sequential scan, which reads published rows too, as in the last column, even without a held horizon.',
    '',
    `**Recommendation: (a)**, ${Number.isFinite(ratio) ? `about ${fmt(ratio, 0)}x fewer buffers than today's claim at N = ${biggest.n.toLocaleString('en')} (mark upkeep counted once per 10 claims)` : ''}, kept safe as measured above: the relay keeps a mark per table in memory; before each claim (or every poll interval) it reads the writers bound (pg_locks + pg_stat_activity, no table pages) and then the next mark from the old one; the claim adds \`created_at >= mark\`. Rows pending below the mark cannot exist: committed ones are seen by step 2, uncommitted ones hold ROW EXCLUSIVE and bound it by their transaction's start, later writers date their events after now(). Leased and retrying events are pending, so the mark never passes them. Two gaps to close in the design: \`outbox replay\` (and any UPDATE that makes an old row pending again) and a created_at set by hand can put a pending row below the mark, so the mark resets to -infinity (one full claim) on the relay's start and at a fixed interval (e.g. every lease period), which bounds the delay of such rows; a holder whose start the relay cannot read (a prepared transaction; another role's session without pg_read_all_stats) gives -infinity; and a session left idle in transaction after writing an event pins the mark at its start, so the claim walks again what was published since (today's cost, from that point). On MariaDB the claim index (published_at, failed_at, created_at, id) gets a delete-marked entry per mark that purge cannot remove behind an open read view: the table above shows the same walk, and the same mark removes it; there the writers bound would come from information_schema (INNODB_TRX with its trx_started, for transactions that have written to the outbox), not measured here.`,
  ].join('\n')
}

function mariadbTable(mariadb, head, chunk, repeats) {
  if (!mariadb || mariadb.skipped) return [`MariaDB skipped: ${mariadb?.skipped ?? 'not run'}`]
  const c = (m) => `${fmt(m.pages, 0)} / ${fmt(m.ms, 2)}`
  return [
    `**MariaDB**: the same N published (${chunk} per statement: inserted, leased, marked by the dialect's own mark) while one session holds \`START TRANSACTION WITH CONSISTENT SNAPSHOT\` and has read the table, ${head} pending events in front; the claim's locking read (\`FOR UPDATE SKIP LOCKED\` on the claim index, READ COMMITTED, as the relay) under \`ANALYZE FORMAT=JSON\` in a transaction rolled back, median of ${repeats}: InnoDB pages accessed (\`r_engine_stats\`, load-independent) / ms. "purged": the snapshot released, then the pick measured every second until it is back near the mark's figure (at most 60 s; the wait is shown). InnoDB's history list counts undo logs (transactions), server-wide: other sessions' work shows in it.`,
    '',
    '| N published under the read view | today | (a) from the low-water mark | history list length | today, purged (after s) | history list then |',
    '|---|---|---|---|---|---|',
    ...mariadb.results.map((r) => `| ${r.n.toLocaleString('en')} | ${c(r.held.today)} | ${c(r.held.fromMark)} | ${r.held.history} | ${c(r.released.today)} (${fmt(r.released.today.waitedS, 0)} s) | ${r.released.history} |`),
  ]
}

/** What the relay ships (design (a), `outbox relay --claim-from mark`, the default on PostgreSQL) against today's claim, per N. */
function shippedLine(results) {
  if (!results.every((r) => r.held.shipped)) return []
  const per = results.map((r) => `N ${r.n.toLocaleString('en')}: ${fmt(r.held.shipped.custom.buffers, 0)} (generic plan ${fmt(r.held.shipped.generic.buffers, 0)}) against ${fmt(r.held.today.buffers, 0)}`)
  return [`**Shipped**: the relay claims from its mark (\`--claim-from mark\`, the default on PostgreSQL). Its claim's buffers in this run, against today's claim (\`--claim-from start\`) in the same run: ${per.join('; ')}. Flat in N, as (a) measured.`, '']
}
