// `outbox chaos` for people: one table row per step and scenario, then the violations with
// their witnesses, then one verdict line.
import type {ChaosProgress, ChaosReport} from '../chaos/report.js'
import {redactSecrets} from '../core/redact.js'
import {palette} from './color.js'
import {renderTable} from './table.js'

export const CHAOS_COLUMNS = [
  'step / scenario',
  'runs',
  'kills',
  'orders',
  'events',
  'deliveries',
  'dup deliveries',
  'dup effects',
  'lost',
  'phantom',
  'stuck',
  'verdict',
]

export function chaosHeader(r: Pick<ChaosReport, 'database' | 'broker' | 'strategy' | 'consumer' | 'scenario' | 'seed' | 'relays'>): string {
  return `outbox chaos on ${r.database}; broker ${r.broker}; scenario ${r.scenario}; strategy ${r.strategy}; consumer ${r.consumer}; relays ${r.relays}; seed ${r.seed}`
}

export async function renderChaosReport(report: ChaosReport): Promise<string> {
  const c = await palette()
  const verdict = (v: string) => (v === 'pass' ? c.green(v) : v === 'fail' ? c.red(v) : c.yellow(v))
  const table = await renderTable(
    CHAOS_COLUMNS,
    report.cases.map((k) => [
      k.case,
      k.runs,
      k.kind === 'step' || k.kills ? k.kills : '-',
      k.aggregates,
      k.events,
      k.deliveries,
      k.duplicateDeliveries,
      k.duplicateEffects,
      k.lost,
      k.phantom,
      k.stuck,
      verdict(k.verdict),
    ]),
  )
  const lines = [chaosHeader(report), table]
  for (const k of report.cases) {
    if (k.kind === 'scenario' && k.exercised) {
      lines.push(`${k.case}: ${k.stale} stale version(s) detected and not applied, ${k.failed} event(s) failed, highest attempts ${k.maxAttempts}`)
    }
    for (const v of k.violations) {
      lines.push(`${c.red('violation')} ${k.case}: ${v.invariant}: ${v.message}: ${v.count}${v.witnesses.length ? ` (e.g. ${v.witnesses.join(', ')})` : ''}`)
    }
    for (const note of k.notes) if (k.verdict !== 'pass') lines.push(`${c.yellow('not exercised')} ${k.case}: ${note}`)
  }
  const secs = (report.ms / 1000).toFixed(1)
  const {runs, kills, violations, notExercised} = report.totals
  if (report.ok) lines.push(c.green(`PASS: ${runs} runs, ${kills} kills observed, every invariant held (seed ${report.seed}, ${secs} s)`))
  else {
    const why = [violations ? `${violations} violation(s)` : '', notExercised ? `${notExercised} run(s) not exercised` : ''].filter(Boolean).join(', ')
    lines.push(c.red(`FAIL: ${why} in ${runs} runs (seed ${report.seed}, ${secs} s); repeat with --seed ${report.seed}`))
  }
  return lines.join('\n') + '\n'
}

/** A progress reporter: one rewritten line on a TTY, plain lines otherwise (CI logs). */
export function chaosProgress(stream: NodeJS.WriteStream = process.stderr): (p: ChaosProgress) => void {
  const tty = Boolean(stream.isTTY)
  return (p) => {
    const label = `[${p.index + 1}/${p.total}] ${p.case}${p.iteration > 1 ? ` #${p.iteration}` : ''}`
    if (!p.run) {
      if (tty) stream.write(`\r\x1b[K${label} ...`)
      return
    }
    const kills = p.run.kills.length ? `, ${p.run.kills.filter((k) => k.ok).length} kill(s)` : ''
    const line = `${label}: ${p.run.verdict}${kills}, ${(p.run.ms / 1000).toFixed(1)} s${p.run.note ? ` (${p.run.note})` : ''}`
    if (tty) stream.write(`\r\x1b[K${p.index + 1 === p.total ? line + '\n' : line}`)
    else stream.write(line + '\n')
  }
}

/**
 * The command line that repeats a chaos invocation: its own arguments with the seed added,
 * passwords in URLs masked, each argument quoted for a POSIX shell where it needs it.
 */
export function repeatCommand(bin: string, argv: readonly string[], seed: number): string {
  const args = [...argv]
  if (!args.some((a) => a === '--seed' || a.startsWith('--seed='))) args.push('--seed', String(seed))
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)
  return [bin, 'chaos', ...args.map((a) => quote(redactSecrets(a)))].join(' ')
}
