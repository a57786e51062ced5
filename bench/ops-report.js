// The ops suite's section of BENCHMARKS.md, from the figures bench/suites/ops.js measured.
import {fmt} from './lib.js'

export function opsMarkdown(status, tp, memory, purgeControl) {
  const lines = [
    'Status reads the pending rows (PostgreSQL/SQLite: the partial index `(created_at, id) WHERE published_at IS NULL AND failed_at IS NULL`; MySQL: the prefix `(NULL, NULL)` of `(published_at, failed_at, created_at, id)`), the failed rows (partial `failed_at` index; MySQL: the prefix `(NULL, NOT NULL)`), and the window (partial `published_at` index; MySQL: a `published_at` range of the same index). Only history grows between rows of this table: same backlog (1000 pending, 50 failed, 1000 published in the window).',
    '',
    `"rows read" is what the status statements read from the table as the server counts them (PostgreSQL EXPLAIN ANALYZE, MariaDB ANALYZE; SQLite counts none, its plans go through the partial indexes, checked in test/ops-status-reads.test.ts): the backlog, 2051 rows, at every size. The times are a median of ${status[0]?.plain.runs} calls after the server has written the load out.`,
    '',
    '| dialect | rows | status median ms (min-max) | ratio to smallest | --by type median ms (min-max) | ratio | rows read |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ]
  for (const d of [...new Set(status.map((s) => s.dialect))]) {
    const rows = status.filter((s) => s.dialect === d)
    for (const s of rows) {
      lines.push(
        `| ${d} | ${s.rows.toLocaleString('en')} | ${fmt(s.plain.median)} (${fmt(s.plain.min)}-${fmt(s.plain.max)}) | ${fmt(s.plain.median / rows[0].plain.median, 2)}x | ${fmt(s.byType.median)} (${fmt(s.byType.min)}-${fmt(s.byType.max)}) | ${fmt(s.byType.median / rows[0].byType.median, 2)}x | ${s.rowsRead == null ? 'n/a' : s.rowsRead.toLocaleString('en')} |`,
      )
    }
  }
  lines.push(
    '',
    'Archive and replay: batched (`--batch 1000` unless stated, each batch one transaction, run as the library in a child process) against one bulk transaction doing the same work (`INSERT ... SELECT` + `DELETE`, or one `UPDATE`), same table, same run. Rows/s medians (min-max). A ratio is batched / bulk rows/s of one pair (the batched run, then the bulk on a fresh copy of the table), given as the median (min-max) over the pairs: the machine is shared, and its speed moved by up to 2x between pairs, less within one. "longest batch" is the longest gap between two batch commits, i.e. the longest any lock was held; the bulk transaction holds its locks for its whole duration. History rows are laid down as the producer writes them: ids time-ordered like its UUIDv7 and inserted oldest first (runs before 2026-12-03 had ids and insertion order reversed against created_at).',
    '',
    '| dialect | rows | batch | runs | archive rows/s | bulk rows/s | ratio | replay rows/s | bulk rows/s | ratio | longest batch ms (archive / replay) | bulk tx ms (archive / replay) | peak RSS MB (archive / replay) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  )
  const r = (s) => `${fmt(s.median, 0)} (${fmt(s.min, 0)}-${fmt(s.max, 0)})`
  const ratio = (s) => (s.runs > 1 ? `${fmt(s.median, 2)} (${fmt(s.min, 2)}-${fmt(s.max, 2)})` : fmt(s.median, 2))
  for (const t of tp) {
    lines.push(
      `| ${t.dialect} | ${t.rows.toLocaleString('en')} | ${t.batch} | ${t.archive.batched.runs} | ${r(t.archive.batched)} | ${r(t.archive.bulk)} | ${ratio(t.archive.ratio)} | ${r(t.replay.batched)} | ${r(t.replay.bulk)} | ${ratio(t.replay.ratio)} | ${fmt(t.archive.maxBatchMs.max, 0)} / ${fmt(t.replay.maxBatchMs.max, 0)} | ${fmt(t.bulkTxMs.archive.median, 0)} / ${fmt(t.bulkTxMs.replay.median, 0)} | ${fmt(t.archive.rssMb.max)} / ${fmt(t.replay.rssMb.max)} |`,
    )
  }
  const purged = tp.filter((t) => t.replay.ratioWithPurge.runs > 0)
  if (purged.length) {
    lines.push(
      '',
      "MariaDB purges after commit: InnoDB's background purge removes the old row versions and delete-marked records a statement left, after it commits. The bulk statement commits first and is purged afterwards; the purge of a batched run's earlier batches runs beside it, so it is nearly done when the run ends (the control below measures what that costs the run). Seconds until the History list length was back to 0 after each run, and the ratio with that time added to both sides (median (min-max) over the same pairs):",
      '',
      '| rows | batch | archive purge s (batched / bulk) | archive ratio with purge | replay purge s (batched / bulk) | replay ratio with purge |',
      '|---:|---:|---:|---:|---:|---:|',
      ...purged.map(
        (t) =>
          `| ${t.rows.toLocaleString('en')} | ${t.batch} | ${fmt(t.archive.purgeMs.batched.median / 1000)} / ${fmt(t.archive.purgeMs.bulk.median / 1000)} | ${ratio(t.archive.ratioWithPurge)} | ${fmt(t.replay.purgeMs.batched.median / 1000)} / ${fmt(t.replay.purgeMs.bulk.median / 1000)} | ${ratio(t.replay.ratioWithPurge)} |`,
      ),
    )
  }
  if (purgeControl) {
    const c = purgeControl
    const line = (op) => `${op}: ${fmt(c[op].beside.median, 0)} (${fmt(c[op].beside.min, 0)}-${fmt(c[op].beside.max, 0)}) rows/s with the purge beside it, ${fmt(c[op].heldOff.median, 0)} (${fmt(c[op].heldOff.min, 0)}-${fmt(c[op].heldOff.max, 0)}) with it held off, ${fmt(c[op].heldOff.median / c[op].beside.median, 2)}x`
    lines.push(
      '',
      `Control (MariaDB, ${c.rows.toLocaleString('en')} rows, --batch 1000, ${c.archive.beside.runs} runs each, interleaved): the same batched run with InnoDB's purge held off for its whole length by a read view left open on another connection, so that its batches are purged afterwards, as the bulk statement's are. ${line('archive')}; ${line('replay')}. Where the two are alike, the purge beside a batched run is not what keeps it under the bulk statement's speed: the batch's own statements are (the summary read and the change, which the bulk does in one pass).`,
    )
  }
  const mem = []
  for (const d of [...new Set(tp.map((t) => t.dialect))]) {
    const rows = tp.filter((t) => t.dialect === d && t.batch === 1000).sort((a, b) => a.rows - b.rows)
    for (let i = 1; i < rows.length; i++) {
      const [small, big] = [rows[i - 1], rows[i]]
      mem.push(`${d} ${big.rows.toLocaleString('en')} vs ${small.rows.toLocaleString('en')} rows: archive ${fmt(big.archive.rssMb.max / small.archive.rssMb.max, 2)}x, replay ${fmt(big.replay.rssMb.max / small.replay.rssMb.max, 2)}x`)
    }
  }
  if (mem.length) lines.push('', `Peak RSS of the batched run, each size against the next smaller: ${mem.join('; ')}.`)
  lines.push(
    '',
    `Peak RSS of a batched archive (--batch 1000, one run each) with V8's default heap and with its young generation capped (\`node --max-semi-space-size=1\`): V8 grows the young generation while a process keeps allocating, so a longer run peaks higher whatever it holds; with the cap, the growth left is what the run keeps.`,
    '',
    'The last columns are a third run with a full garbage collection every 10 batches (`node --expose-gc`): the heap still live after it, at the first sample (batch 10) and at the last. What a run keeps per batch shows there, apart from how V8 sizes its heap.',
    '',
    '| dialect | rows | peak RSS MB, default | seconds | peak RSS MB, young generation capped | seconds | live heap MB, batch 10 | live heap MB, last batch | live heap MB, max |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...memory.flat().map((m) => `| ${m.dialect} | ${m.rows.toLocaleString('en')} | ${fmt(m.defaultMb)} | ${fmt(m.defaultS, 2)} | ${fmt(m.cappedMb)} | ${fmt(m.cappedS, 2)} | ${fmt(m.liveMb?.first, 2)} | ${fmt(m.liveMb?.last, 2)} | ${fmt(m.liveMb?.max, 2)} |`),
    '',
    memory.map(([small, big]) => `${big.dialect} ${big.rows.toLocaleString('en')} against ${small.rows.toLocaleString('en')} rows: ${fmt(big.defaultMb / small.defaultMb, 2)}x with the default heap, ${fmt(big.cappedMb / small.cappedMb, 2)}x capped, live heap at the end ${fmt(big.liveMb?.last / small.liveMb?.last, 2)}x`).join('; ') + '.',
  )
  return lines.join('\n')
}
