// The pressure suite's figures from its raw timings (seconds since the run started): one row
// per second for the plot, one row per phase for the table, and the markdown around them.
import {fmt, median, percentile} from './lib.js'

/** Per second: events committed, events first published, p99 ms of those published. */
export function secondSeries(committed, published, end) {
  const rows = Array.from({length: Math.ceil(end) + 1}, (_, t) => ({t, produced: 0, published: 0, latencies: []}))
  for (const c of committed.values()) rows[Math.floor(c)].produced++
  for (const [id, p] of published) {
    const row = rows[Math.min(rows.length - 1, Math.floor(p))]
    row.published++
    const c = committed.get(id)
    if (c !== undefined) row.latencies.push((p - c) * 1000)
  }
  return rows.map(({latencies, ...r}) => ({...r, p99: latencies.length ? percentile(latencies, 99) : NaN}))
}

const within = (t, p) => t >= p.from && t < p.to

/** Math.max of a list too long to spread (a phase of minutes holds 100,000s of claims) */
const maxOf = (values) => values.reduce((m, v) => (v > m ? v : m), -Infinity)

/** One row of figures per phase. */
export function phaseFigures({phases, committed, published, duplicates = [], batches, samples, series, control = []}) {
  const rows = phases.map((p) => {
    const seconds = p.to - p.from
    const latencies = []
    let produced = 0
    let backlog = 0
    for (const [id, c] of committed) {
      const pub = published.get(id)
      if (c < p.to && !(pub < p.to)) backlog++
      if (!within(c, p)) continue
      produced++
      if (pub !== undefined) latencies.push((pub - c) * 1000)
    }
    let pubs = 0
    for (const t of published.values()) if (within(t, p)) pubs++
    const inPhase = batches.filter((b) => within(b.t, p) && b.claimed > 0)
    const batchMs = inPhase.map((b) => b.ms)
    const claimMs = inPhase.map((b) => b.claimMs).filter(Number.isFinite)
    const gauges = samples.filter((s) => within(s.t, p) && !s.error)
    const last = gauges.at(-1) ?? {}
    return {
      name: p.name,
      seconds,
      targetRate: p.rate,
      producedPerS: produced / seconds,
      publishedPerS: pubs / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      batchMsMean: batchMs.length ? batchMs.reduce((a, b) => a + b, 0) / batchMs.length : NaN,
      batchMsP99: percentile(batchMs, 99),
      batches: batchMs.length,
      claimMsMean: claimMs.length ? claimMs.reduce((a, b) => a + b, 0) / claimMs.length : NaN,
      claimMsP99: percentile(claimMs, 99),
      claimMsMax: maxOf(claimMs),
      controlP99: percentile(control.filter((c) => within(c.t, p)).map((c) => c.ms), 99),
      scanBuffersMax: maxOf(gauges.map((g) => g.scanBuffers).filter(Number.isFinite)),
      scanBuffersEnd: last.scanBuffers,
      // taken once, at the phase's end (bench/pressure-load.js markClaim)
      markScanBuffersEnd: gauges.findLast((g) => Number.isFinite(g.markScanBuffers))?.markScanBuffers,
      markClaimBuffersEnd: gauges.findLast((g) => Number.isFinite(g.markClaimBuffers))?.markClaimBuffers,
      scanMsMedian: gauges.length ? median(gauges.map((g) => g.scanMs)) : NaN,
      dead: last.dead,
      historyLength: last.historyLength,
      pendingIndexKiB: last.pendingIndexKiB,
      indexesKiB: last.indexesKiB,
      backlogAtEnd: backlog,
      duplicates: duplicates.filter((t) => within(t, p)).length,
      to: p.to,
      faultTo: p.faultTo,
    }
  })
  // time from a phase's end (a restart's: the server answering again) to the first second whose
  // p99 is back at the clean phase's
  const clean = rows.find((r) => r.name === 'clean')?.p99
  rows.forEach((r, i) => {
    if (r.name === 'clean' || !Number.isFinite(clean)) return
    const end = r.faultTo ?? r.to
    const back = series.find((s) => s.t >= Math.floor(end) && s.p99 <= clean)
    r.backToCleanP99S = back ? Math.max(0, back.t + 1 - end) : NaN
    // the phases follow one another at once: a next phase that loads the machine itself (the
    // readers after idle-in-tx) keeps the p99 up, and the figure is then that phase's, not this one's
    const next = phases[i + 1]
    if (back && next && back.t >= next.from) r.backAfterPhase = next.name
  })
  return rows
}

const DB = {postgres: 'PostgreSQL', mysql: 'MariaDB'}

function table(run, svg) {
  const pg = run.dialect === 'postgres'
  const head = pg
    ? '| phase | s | produced/s (target) | published/s | p50 ms | p99 ms | relay batch ms mean (p99) | relay claim ms mean (p99; max) | control SELECT 1 p99 ms | pending scan buffers end (max) | scan ms | relays\' claim from the mark at the end: buffers | dead tuples | pending index KiB | backlog at end | duplicates | back to clean p99 |'
    : '| phase | s | produced/s (target) | published/s | p50 ms | p99 ms | relay batch ms mean (p99) | relay claim ms mean (p99; max) | control SELECT 1 p99 ms | pending scan pages end (max) | scan ms | relays\' locking read from the mark at the end: pages | history list length | indexes KiB | backlog at end | duplicates | back to clean p99 |'
  const rows = run.phases.map((f) => {
    const common = `| ${f.name} | ${fmt(f.seconds, 0)} | ${fmt(f.producedPerS, 0)} (${fmt(f.targetRate, 0)}) | ${fmt(f.publishedPerS, 0)} | ${fmt(f.p50)} | ${fmt(f.p99)} | ${fmt(f.batchMsMean, 2)} (${fmt(f.batchMsP99, 1)}) | ${fmt(f.claimMsMean, 2)} (${fmt(f.claimMsP99, 1)}; ${fmt(f.claimMsMax, 0)}) | ${fmt(f.controlP99, 1)} |`
    const back = f.name === 'clean' ? '-' : Number.isFinite(f.backToCleanP99S) ? `${fmt(f.backToCleanP99S, 0)} s${f.backAfterPhase ? ` (only after ${f.backAfterPhase} had begun: that phase's own)` : ''}` : 'not within the run'
    return pg
      ? `${common} ${fmt(f.scanBuffersEnd, 0)} (${fmt(f.scanBuffersMax, 0)}) | ${fmt(f.scanMsMedian, 2)} | ${fmt(f.markScanBuffersEnd, 0)}${Number.isFinite(f.markClaimBuffersEnd) ? `; whole claim ${fmt(f.markClaimBuffersEnd, 0)}` : ''} | ${f.dead ?? '-'} | ${fmt(f.pendingIndexKiB, 0)} | ${f.backlogAtEnd} | ${f.duplicates ?? '-'} | ${back} |`
      : `${common} ${fmt(f.scanBuffersEnd, 0)} (${fmt(f.scanBuffersMax, 0)}) | ${fmt(f.scanMsMedian, 2)} | ${fmt(f.markScanBuffersEnd, 0)} | ${f.historyLength ?? '-'} | ${fmt(f.indexesKiB, 0)} | ${f.backlogAtEnd} | ${f.duplicates ?? '-'} | ${back} |`
  })
  const t = run.totals
  const exits = t.relayExits.length ? `${t.relayExits.length} (${[...new Set(t.relayExits.map((e) => `code ${e.code ?? e.signal}: ${e.line}`))].slice(0, 3).join('; ')})` : '0'
  return [
    `### ${DB[run.dialect]}`,
    '',
    `![throughput and p99 per second, ${DB[run.dialect]}](bench/results/${svg(run.dialect)})`,
    '',
    head,
    head.replace(/[^|]+/g, '---'),
    ...rows,
    '',
    `Events committed ${t.committed}, published ${t.published}; **lost ${t.lost}**, duplicates ${t.duplicates}, rows still unmarked when the relays stopped ${t.unpublishedRows} (published, their mark lost to a fault: sent again once their lease lapses). Relay exits nobody asked for: ${exits}. SIGKILLs: ${t.kills}; connections cut: ${t.connectionsCut}; producer transactions failed: ${t.producerErrors}${t.producerLastError ? ` (last: ${t.producerLastError})` : ''}.${faultLine(t)}${run.autovacuum ? ` Autovacuum: ${run.autovacuum}.` : ''}`,
  ].join('\n')
}

function faultLine(t) {
  const parts = []
  if (t.restarts?.length) parts.push(`Server restarts: ${t.restarts.length}, answering again after ${t.restarts.map((s) => `${fmt(s, 1)} s`).join(', ')} (back to clean p99 counted from then)`)
  if (t.slots?.length) parts.push(`Slots phase: ${t.slots.map((s) => `${s.held} idle sessions held`).join(', ')} (the server refused the next: ${t.slots[0].refusal})`)
  return parts.length ? ` ${parts.join('. ')}.` : ''
}

export function pressureMarkdown({quick, config, runs, skipped, relays, readers, svg = (d) => `pressure-${d}.svg`}) {
  const phases = config.phases.map((p) => `${p.name} ${p.seconds} s`).join(', ')
  return [
    quick ? '**Quick run**: 20 s phases; the figure that matters is 10 minutes of idle-in-tx (`npm run bench -- pressure`, or `--idle-seconds=600`).\n' : '',
    `${config.rate} events/s (1.5x in high-load) produced on schedule by ${config.producers} connections, one business transaction each (insert an order row + \`writeEvent\`, COMMIT); ${relays} \`outbox relay\` processes (the shipped CLI: \`--publisher stdout --poll 100ms --log-format json\`, \`--listen\` on PostgreSQL${config.claimFrom ? `, \`--claim-from ${config.claimFrom}\`` : ''}) whose stdout lines are timed as they arrive. Phases: ${phases}. idle-in-tx: one session holds \`BEGIN; SELECT txid_current()\` (MariaDB: \`START TRANSACTION WITH CONSISTENT SNAPSHOT\` and a read) for the phase; active-readers: ${readers} REPEATABLE READ sessions, each one transaction for the phase, scanning the outbox every 200 ms${config.readersNice !== undefined ? ` (their backends at nice ${config.readersNice} and without parallel workers: \`--readers-nice\`, the closest this machine gets to a server with cores to spare for them)` : ''}; high-load: 1.5x the rate; relay-kill: relay 1 SIGKILLed every 5 s and restarted 0.5 s later; conn-cut: the relays' connections ended (\`pg_terminate_backend\` by application_name; MariaDB \`KILL\` by the relays' client ports) every 250 ms; db-restart: the (private) server restarted a third into the phase${config.downSeconds ? `, kept stopped ${config.downSeconds} s` : ''} (\`pg_ctlcluster restart\`; mariadbd SIGTERM, then started with its own command line); slots-full: idle sessions take every connection slot but ${config.slotsFree ?? 3} for the phase, and the relays' connections are cut every 5 s so they connect again into those.`,
    '',
    'Columns: produced/s (target: the schedule; below it, the producers\' connections could not commit faster on this machine) and published/s over the phase; latency = the relay line read here − the producer\'s COMMIT returned, for the events committed in the phase; relay batch ms from each relay\'s own batch log line (its claim sent to the batch settled; its mark rides the next claim), relay claim ms from the same line (the claim alone: the mark\'s move, the last batch\'s mark and the lease UPDATE; claims that found nothing are not logged); control = the round trip of `SELECT 1` on a connection of its own every 100 ms (no outbox work: when it rises with the p99, the machine slowed both); gauges sampled every 2 s: on PostgreSQL the claim\'s index scan as `EXPLAIN (ANALYZE, BUFFERS)` of its SELECT (no lock; buffers do not depend on the machine\'s load) from the start of the index and, last column, the relays\' own claim statement (FOR UPDATE SKIP LOCKED, the lease UPDATE and RETURNING, batch 100) from a low-water mark the gauge keeps with the dialect\'s own statements, moved every 2 s, run under EXPLAIN in a transaction rolled back once at the end of each phase (it locks up to 100 pending rows while it runs: taken every 2 s it delayed them): the buffers of its pick (the CTE that scans from the mark and locks, SKIP LOCKED) and the whole statement\'s (the pick and the lease UPDATE of its rows) and `pg_stat_user_tables.n_dead_tup`, on MariaDB the same SELECT under `ANALYZE FORMAT=JSON` (InnoDB\'s pages accessed, `r_engine_stats`, load-independent) and timed, the relays\' locking read (FOR UPDATE SKIP LOCKED, READ COMMITTED, batch 100) from a mark the gauge keeps with the dialect\'s statements (2 s margin) under the same ANALYZE once at each phase\'s end, and `trx_rseg_history_len`; backlog = events committed by the phase\'s end and not yet published; back to clean p99 = from the phase\'s end to the first second whose p99 is at or under the clean phase\'s. This machine is shared: rates and milliseconds are this run\'s, the buffer counts are the load-independent figures.',
    '',
    ...runs.map((r) => table(r, svg)),
    ...Object.entries(skipped).map(([d, why]) => `\n${DB[d]} skipped: ${why}`),
    '',
    'Reproduce: `npm run build && npm run bench -- pressure` (full: 2 min clean, 10 min idle-in-tx, 10 min active-readers, 2 min high-load, 4 min recovery per database); `--quick`; lengths and faults as options, e.g. `npm run bench -- pressure --idle-seconds=600 --faults=kill,cut --dialects=postgres`; the server faults on a private server only: `--faults=restart,slots --pg-url=postgres://postgres@127.0.0.1:5433/outbox_bench` (bench/results/pressure-faults.md).',
  ].join('\n')
}
