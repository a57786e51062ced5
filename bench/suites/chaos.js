// `outbox chaos` default run (8 steps x 1 iteration + 4 scenarios, loopback broker), wall time
// per dialect, through the compiled CLI exactly as a CI job runs it. Targets on this 2-core
// machine: under 30 s on SQLite, under 60 s on each server. Absolute seconds, not ratios: the
// target is absolute; the load average at the start of each run is recorded beside it.
// --quick: one run per dialect, and the 12 cases (8 steps + 4 scenarios) shared out between
// the three dialects, so every case still runs once against a real database but no dialect
// runs all of them: the targets, which are for the whole default run, are not judged.
import {spawnSync} from 'node:child_process'
import {loadavg} from 'node:os'
import {fmt, median} from '../lib.js'
import {BIN} from '../tree.js'

const TARGETS = [
  {dialect: 'sqlite', args: [], targetS: 30, quick: ['--steps', 'producer.before-commit,producer.after-commit,relay.after-claim', '--scenarios', 'broker-down']},
  {dialect: 'postgres', args: ['--url', process.env.OUTBOX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'], targetS: 60, quick: ['--steps', 'relay.mid-batch,relay.after-send,relay.after-mark', '--scenarios', 'out-of-order,poison']},
  {dialect: 'mysql (MariaDB)', args: ['--url', process.env.OUTBOX_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'], targetS: 60, quick: ['--steps', 'consumer.before-commit,consumer.after-commit', '--scenarios', 'concurrent-relays']},
]

function runOnce(args) {
  const load = loadavg()[0]
  const start = process.hrtime.bigint()
  const r = spawnSync(process.execPath, [BIN, 'chaos', '--json', ...args], {encoding: 'utf8', maxBuffer: 64 << 20, env: {...process.env, NO_COLOR: '1'}})
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  if (r.status !== 0) throw new Error(`outbox chaos ${args.join(' ')} exited ${r.status}: ${r.stderr.trim().split('\n').pop()}`)
  const report = JSON.parse(r.stdout)
  const perRun = report.runs.map((x) => x.ms / 1000)
  return {seconds, load, runs: report.runs.length, kills: report.totals.kills, medianRunS: median(perRun), slowest: report.runs.reduce((a, b) => (b.ms > a.ms ? b : a)).case}
}

export default async function chaos({quick, log}) {
  const repeats = quick ? 1 : 3
  const raw = []
  for (const t of TARGETS) {
    const samples = []
    for (let i = 0; i < repeats; i++) {
      const s = runOnce(quick ? [...t.args, ...t.quick] : t.args)
      samples.push(s)
      log(`${t.dialect}: ${fmt(s.seconds)} s (${s.runs} runs, ${s.kills} kills, load ${fmt(s.load, 2)})`)
    }
    raw.push({dialect: t.dialect, targetS: t.targetS, cases: quick ? t.quick : 'default', samples})
  }
  const rows = raw.map(({dialect, targetS, samples}) => {
    const secs = samples.map((s) => s.seconds)
    const m = median(secs)
    const verdict = quick ? 'not judged (quick: a third of the cases)' : m < targetS ? 'met' : '**missed**'
    return `| ${dialect} | ${fmt(m)} | ${fmt(Math.min(...secs))} – ${fmt(Math.max(...secs))} | ${fmt(median(samples.map((s) => s.medianRunS)))} | ${samples[0].slowest} | ${fmt(median(samples.map((s) => s.load)), 2)} | < ${targetS} s | ${verdict} |`
  })
  const cases = quick
    ? `**Quick run**: each dialect ran a third of the cases (${TARGETS.map((t) => `${t.dialect}: ${t.quick[1]}, ${t.quick[3]}`).join('; ')}), once; the wall times are not comparable with the targets, which are for every case on one dialect.\n\n`
    : ''
  const markdown = `${cases}\`outbox chaos\` with its defaults (every step once, plus broker-down, out-of-order, poison and
concurrent-relays; 3 orders = 6 events per run; loopback broker), wall time of the whole
command including process start-up, ${repeats} run(s) per dialect, median reported. Each run spawns
real producer, relay and consumer processes and restarts the killed one, so the time is
dominated by Node process start-up and the lease (1 s) the relay waits out after a kill.

| dialect | wall time (s, median) | range | per run (s, median) | slowest case | load avg (1 min) | target | |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}
`
  return {title: 'Chaos harness: default run wall time per dialect', markdown, raw}
}
