// A low-water mark for the MariaDB claim (issue 23), measured, not shipped: is there a writers
// bound MariaDB can give, safe for a producer that commits late, that frees the claim from a
// held read view? Two step-1 bounds, moved side by side in one run:
//   any:   least(UTC now - 1 s, trx_started - 1 s of every other INNODB_TRX row with
//          trx_rows_modified > 0): INNODB_TRX does not say which table a transaction wrote, so
//          every writer on the server holds the mark back;
//   table: the same, only for sessions holding a write metadata lock on the outbox table
//          (information_schema.METADATA_LOCK_INFO, the metadata_lock_info plugin: a transaction
//          that wrote a table keeps that lock until it ends), as pg_locks gives PostgreSQL.
// The 1 s covers trx_started's whole seconds and INNODB_TRX's cache (refreshed at most every
// 100 ms). Step 2: mark = least(bound, the oldest pending event at or after the old mark).
// A read-only snapshot (the held read view) modifies nothing and does not hold either back.
// Checked: a producer keeps its outbox INSERT uncommitted while N events are published and
// marked (longer than any relay's window): the naive mark (step 2 alone) passes its event, the
// rules must not, and the claim from their mark must return it once committed. Meanwhile another
// session keeps a write transaction open on another table (a long business transaction, or
// another application on the server). Measured: InnoDB pages the claim's locking read touches
// (ANALYZE FORMAT=JSON, load-independent), today and from each mark, the read view held.
// Options: --mysql-url= (default the shared server), --n= (default 50,000; --quick 10,000).
import {fmt, median} from '../lib.js'
import {onInterrupt} from '../interrupt.js'
import {dropTables, freshTables} from '../outbox.js'
import {lib, MYSQL_URL, unreachable} from '../servers.js'
import {analyze, connect, historyLength, pick, publish, rows} from '../horizon-mariadb.js'
import {MYSQL_READ_COMMITTED} from '../lib-under-test.js'

const CHUNK = 1000
const HEAD = 200
const REPEATS = 5
const TS = `'%Y-%m-%d %H:%i:%s.%f'`

/** Step 1: the writers bound, UTC, as text; `table`: only the outbox's writers (their metadata locks). */
const bound = (names, rule) => `SELECT DATE_FORMAT(LEAST(UTC_TIMESTAMP(6) - INTERVAL 1 SECOND,
  COALESCE(MIN(TIMESTAMPADD(SECOND, TIMESTAMPDIFF(SECOND, NOW(), t.trx_started) - 1, UTC_TIMESTAMP(6))), UTC_TIMESTAMP(6))), ${TS}) AS bound,
  DATE_FORMAT(UTC_TIMESTAMP(6), ${TS}) AS now
FROM information_schema.INNODB_TRX t WHERE t.trx_mysql_thread_id <> CONNECTION_ID() AND ${
  rule === 'table'
    ? `EXISTS (SELECT 1 FROM information_schema.METADATA_LOCK_INFO l WHERE l.THREAD_ID = t.trx_mysql_thread_id AND l.TABLE_SCHEMA = DATABASE() AND l.TABLE_NAME = '${names.outbox}' AND l.LOCK_MODE IN ('MDL_SHARED_WRITE', 'MDL_SHARED_UPGRADABLE', 'MDL_SHARED_NO_READ_WRITE', 'MDL_EXCLUSIVE'))`
    : 't.trx_rows_modified > 0'
}`

/** Step 2: the oldest pending event at or after the old mark (committed ones: READ COMMITTED). */
const oldest = (names, mark) => `SELECT DATE_FORMAT(MIN(created_at), ${TS}) AS m FROM ${names.outbox} FORCE INDEX (${names.outbox}_claim_idx)
WHERE published_at IS NULL AND failed_at IS NULL AND created_at >= '${mark}'`

const least = (a, b) => (b === null || b === undefined ? a : a < b ? a : b)

async function nextMark(c, names, mark, rule = 'any') {
  const started = performance.now()
  const [{bound: b, now}] = await rows(c, bound(names, rule))
  const step1Ms = performance.now() - started
  const [{m}] = await rows(c, oldest(names, mark))
  // naive: step 2 alone, what the relay can see (now when nothing is pending)
  return {rule: least(b, m), naive: m ?? now, ms: performance.now() - started, step1Ms}
}

async function run(url, n, rules) {
  const db = await lib.openDb(url, {poolSize: 1})
  const names = await freshTables(db, 'mmk')
  const other = `${names.outbox}_other`
  const [c, hold, late, foreign] = [await connect(url), await connect(url), await connect(url), await connect(url)]
  const cleanUp = async () => {
    for (const s of [foreign, late, hold, c]) await s.end().catch(() => {})
    await db.execute(lib.sql`${lib.raw(`DROP TABLE IF EXISTS ${other}`)}`).catch(() => {})
    await dropTables(db, names)
    await db.close()
  }
  const unregister = onInterrupt(cleanUp)
  try {
    await c.query(MYSQL_READ_COMMITTED)
    await c.query(`CREATE TABLE ${other} (id INT PRIMARY KEY) ENGINE=InnoDB`)
    await hold.query('START TRANSACTION WITH CONSISTENT SNAPSHOT')
    await hold.query(`SELECT COUNT(*) FROM ${names.outbox}`)
    await foreign.query('START TRANSACTION')
    await foreign.query(`INSERT INTO ${other} VALUES (1)`)
    const marks = {}
    for (const r of rules) marks[r] = (await nextMark(c, names, '1970-01-01 00:00:00.000000', r)).rule
    await new Promise((r) => setTimeout(r, 2000)) // the foreign writer is older than the margin
    // the late producer: its event inserted, its transaction left open
    await late.query('START TRANSACTION')
    await late.query(`INSERT INTO ${names.outbox} (id, event_type, aggregate_id, payload, created_at) VALUES (UUID(), 'order.created', 'late', '{}', UTC_TIMESTAMP(6))`)
    const [{id: lateId, at: lateAt}] = await rows(late, `SELECT id, DATE_FORMAT(created_at, ${TS}) AS at FROM ${names.outbox} WHERE aggregate_id = 'late'`)
    let naive = marks[rules[0]]
    let naivePassed = false
    const passed = Object.fromEntries(rules.map((r) => [r, false]))
    const upkeep = Object.fromEntries(rules.map((r) => [r, []]))
    for (let done = 0; done < n; done += CHUNK) {
      await publish(c, names, Math.min(CHUNK, n - done), CHUNK)
      for (const r of rules) {
        const next = await nextMark(c, names, marks[r], r)
        upkeep[r].push(next.ms)
        marks[r] = next.rule
        passed[r] ||= marks[r] > lateAt
      }
      naive = (await nextMark(c, names, naive)).naive
      naivePassed ||= naive > lateAt
    }
    await c.query(`INSERT INTO ${names.outbox} (id, event_type, aggregate_id, payload, created_at) SELECT UUID(), 'order.created', CONCAT('head-', seq), '{}', UTC_TIMESTAMP(6) FROM seq_1_to_${HEAD}`)
    const measureAll = async () => {
      const out = {today: await analyze(c, pick(names), REPEATS), history: await historyLength(c)}
      for (const r of rules) out[r] = await analyze(c, pick(names, marks[r]), REPEATS)
      return out
    }
    const pinned = await measureAll()
    await late.query('COMMIT')
    const claimedLate = {}
    for (const r of rules) {
      marks[r] = (await nextMark(c, names, marks[r], r)).rule
      claimedLate[r] = (await rows(c, pick(names, marks[r]).replace(/ FOR UPDATE SKIP LOCKED$/, '').replace(/LIMIT 100/, 'LIMIT 1'))).some((x) => x.id === lateId)
    }
    // the late event published: the marks move on, the read view and the foreign writer still open
    await c.query(`UPDATE ${names.outbox} SET published_at = UTC_TIMESTAMP(6) WHERE aggregate_id = 'late'`)
    // past step 1's 1 s margin: in a relay's steady state the mark trails now by that second
    await new Promise((r) => setTimeout(r, 1500))
    for (const r of rules) marks[r] = (await nextMark(c, names, marks[r], r)).rule
    const committed = await measureAll()
    const free = {}
    for (const r of rules) {
      const runs = []
      for (let i = 0; i < REPEATS; i++) runs.push(await nextMark(c, names, marks[r], r))
      free[r] = {ms: median(runs.map((x) => x.ms)), step1Ms: median(runs.map((x) => x.step1Ms)), pinnedMs: median(upkeep[r])}
    }
    await foreign.query('ROLLBACK')
    return {n, rules, lateAt, naivePassed, passed, claimedLate, pinned, committed, upkeep: free}
  } finally {
    unregister()
    await cleanUp()
  }
}

export default async function mariadbMark({quick, args = []}) {
  const opt = Object.fromEntries(args.filter((a) => a.startsWith('--') && a.includes('=')).map((a) => a.slice(2).split('=')))
  const url = opt['mysql-url'] ?? MYSQL_URL
  const n = Number(opt.n ?? (quick ? 10_000 : 50_000))
  const down = await unreachable(url)
  if (down) return {title: 'MariaDB: a low-water mark from INNODB_TRX', markdown: `MariaDB skipped: ${down}`, raw: {skipped: down}}
  // the table rule needs the metadata_lock_info plugin (INSTALL SONAME 'metadata_lock_info')
  const probe = await lib.openDb(url, {poolSize: 1})
  const plugin = Number((await probe.query(lib.sql`SELECT COUNT(*) AS n FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'METADATA_LOCK_INFO' AND PLUGIN_STATUS = 'ACTIVE'`))[0].n) > 0
  await probe.close()
  const rules = plugin ? ['any', 'table'] : ['any']
  const r = await run(url, n, rules)
  const cell = (m) => `${fmt(m.pages, 0)} / ${fmt(m.ms, 2)}`
  const name = {any: 'any writer (INNODB_TRX)', table: "the outbox's writers (metadata locks)"}
  const row = (label, m) => `| ${label} | ${cell(m.today)} | ${rules.map((x) => cell(m[x])).join(' | ')} | ${m.history} |`
  return {
    title: 'MariaDB: a low-water mark for the claim, two writers bounds (measured, not shipped)',
    markdown: [
      `Server: ${new URL(url).host}. One session holds \`START TRANSACTION WITH CONSISTENT SNAPSHOT\` (read-only) throughout; another keeps a write transaction open on another table throughout (a long business transaction elsewhere); a late producer inserts an outbox event and keeps its transaction open while ${n.toLocaleString('en')} events are published (1,000 per statement: inserted, leased, marked by the dialect's own mark), each mark moved after every 1,000; then ${HEAD} pending events in front. Step 1, "any": least(UTC now − 1 s, trx_started − 1 s of every other INNODB_TRX row with trx_rows_modified > 0); "table": the same over the sessions holding a write metadata lock on the outbox (METADATA_LOCK_INFO)${plugin ? '' : ' (not measured: the metadata_lock_info plugin is not installed on this server)'}; step 2: least(that, the oldest pending event at or after the old mark). The claim's locking read under ANALYZE FORMAT=JSON (READ COMMITTED, rolled back), median of ${REPEATS}: InnoDB pages accessed / ms.`,
      '',
      `| state | today (from the start of the claim index) | ${rules.map((x) => `from the mark, ${name[x]}`).join(' | ')} | history list length |`,
      `|---|---|${rules.map(() => '---|').join('')}---|`,
      row('late producer still open', r.pinned),
      row('late event committed and published; read view and the other table\'s writer still open', r.committed),
      '',
      `Late-commit check: the naive mark (step 2 alone) ${r.naivePassed ? '**passed the late event** (it would never be claimed)' : 'did not pass the late event'}; ${rules.map((x) => `${x}: ${r.passed[x] ? '**passed it: unsafe**' : 'stayed at or below it'}, and after its COMMIT the claim from its mark ${r.claimedLate[x] ? 'returned it first' : '**did not return it**'}`).join('; ')}. Mark upkeep (both steps, median ms): ${rules.map((x) => `${x} ${fmt(r.upkeep[x].ms, 2)} after the late COMMIT (step 1 ${fmt(r.upkeep[x].step1Ms, 2)}), ${fmt(r.upkeep[x].pinnedMs, 2)} while held back`).join('; ')}.`,
    ].join('\n'),
    raw: r,
  }
}
