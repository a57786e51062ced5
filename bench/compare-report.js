// bench/results/compare.md from what `npm run bench -- compare` measured (bench/compare.js).
import {fmt, median} from './lib.js'
import {machineMarkdown} from './report.js'

const SIDES = ['base', 'head']

/**
 * Each headline figure across the rounds so far: its value per round on each side, the medians,
 * head / base of the medians and of each round's pair, and where the head's median falls
 * against the base's rounds.
 */
export function summarise(runs) {
  const figures = new Map()
  for (const run of runs) {
    for (const side of SIDES) {
      for (const f of run[side].headline) {
        if (!figures.has(f.key)) figures.set(f.key, {key: f.key, label: f.label, better: f.better, base: [], head: []})
        figures.get(f.key)[side][run.round - 1] = f.value
      }
    }
  }
  return [...figures.values()].map((f) => {
    const values = (side) => f[side].filter((v) => Number.isFinite(v))
    const baseMedian = median(values('base'))
    const headMedian = median(values('head'))
    const pairs = f.base.map((b, i) => f.head[i] / b).filter((v) => Number.isFinite(v))
    return {...f, baseMedian, headMedian, headOverBase: headMedian / baseMedian, pairMedian: pairs.length ? median(pairs) : NaN, standing: standing(f.better, values('base'), headMedian)}
  })
}

/** Where the head's median falls against the base's rounds: inside their range, or past every one of them. */
function standing(better, base, head) {
  if (base.length < 2 || !Number.isFinite(head)) return 'n/a (needs two base rounds)'
  const [low, high] = [Math.min(...base), Math.max(...base)]
  if (head >= low && head <= high) return 'within the base rounds'
  const higher = head > high
  return (higher === (better === 'higher') ? 'better' : 'worse') + ' than every base round'
}

const value = (v) => (Number.isFinite(v) ? fmt(v, Math.abs(v) >= 10 ? 1 : 3) : '-')
const rounds = (values) => values.map(value).join(' · ')

function side(name, s) {
  const dirty = s.dirty ? `, ${s.dirty} uncommitted change(s)` : ''
  const warnings = s.warnings.length ? ` **${s.warnings.join('; ')}**` : ''
  return `- ${name}: \`${s.tree}\` at ${s.commit}${dirty}${warnings}`
}

function suiteSection(name, suite) {
  const lines = [`## ${name}`, '']
  if (suite.error) lines.push(`**Failed**: ${suite.error}`, '')
  if (!suite.runs.length) return lines.join('\n')
  lines.push(
    '| figure | better | base, per round | base median | head, per round | head median | head / base (medians) | head / base (median of rounds) | head median against the base rounds |',
    '|---|---|---|---:|---|---:|---:|---:|---|',
    ...suite.figures.map(
      (f) =>
        `| ${f.label} | ${f.better} | ${rounds(f.base)} | ${value(f.baseMedian)} | ${rounds(f.head)} | ${value(f.headMedian)} | **${fmt(f.headOverBase, 3)}** | ${fmt(f.pairMedian, 3)} | ${f.standing} |`,
    ),
    '',
  )
  for (const s of SIDES) {
    const runs = suite.runs.map((r) => r[s])
    lines.push(`${s}: ${runs.map((r) => `${fmt(r.seconds, 0)} s`).join(' · ')} per run; load average at the start ${runs.map((r) => fmt(r.loadAtStart, 1)).join(' · ')}.  `)
  }
  return lines.join('\n').trimEnd() + '\n'
}

export function compareMarkdown(report) {
  const base = report.sides.base
  const head = report.sides.head
  const ops = report.opsRows === undefined ? '' : ` The ops suite ran with ${report.opsRows === 'suite default' ? 'its own sizes' : `\`OUTBOX_BENCH_OPS_ROWS=${report.opsRows}\` (its full plan scaled so that 1M rows become ${Number(report.opsRows).toLocaleString('en')})`}.`
  const state = report.finishedAt ? `finished ${report.finishedAt}` : `in progress (written after each round; started ${report.startedAt})`
  return `# Before / after: the same suites on two builds

The same benchmark code (this tree's \`bench/\`) run against two builds through their public entry
(\`dist/src/index.js\`, and \`bin/run.js\` for the start-up suite), ${report.rounds} round(s), ${report.order},
each run in a process of its own${report.quick ? ', **--quick** sizes' : ''}.${ops} Every figure is one a suite
already reports as a ratio against a baseline measured in the same run (relay / raw loop, batched /
bulk, outbox / empty CLI), so a slower or busier machine moves both sides of it; "better" says
which direction is an improvement. Started ${report.startedAt}, ${state}.

${side('base', base)}
${side('head', head)}
${machineMarkdown(report.machine)}

Rerun: \`${report.command}\` (both trees built with \`npm run build\` first).

${Object.entries(report.suites)
  .map(([name, suite]) => suiteSection(name, suite))
  .join('\n')}`
}
