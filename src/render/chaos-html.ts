// `outbox chaos --report chaos.html`: one self-contained HTML file (no network, no external
// script or style) with a timeline per run. A lane per process (producer, relays, consumer) and
// one for the database; operations as bars from invoke to ok / fail / unknown, kills and
// restarts marked, the database's created_at and published_at per event; the events a
// violation names (its witnesses) outlined in red on every lane, the violation listed under it.
import {endsInvocation, type HistoryEntry} from '../chaos/history.js'
import type {ChaosReport, RunResult} from '../chaos/report.js'

const WIDTH = 1100
const LABEL = 110
const LANE = 30
const AXIS = 24

const esc = (text: unknown) =>
  String(text).replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c]!)

export function renderChaosHtml(report: ChaosReport, repeat: string): string {
  const failed = report.runs.filter((r) => r.verdict !== 'pass').length
  const title = `outbox chaos: ${report.ok ? 'every invariant held' : `${failed} run(s) failed`} (seed ${report.seed})`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>${STYLE}</style></head>
<body>
<header>
<h1 class="${report.ok ? 'ok' : 'fail'}">${esc(title)}</h1>
<p>${esc(report.dialect)} (${esc(report.database)}), broker ${esc(report.broker)}, strategy ${esc(report.strategy)}, consumer ${esc(report.consumer)}, scenario ${esc(report.scenario)}, ${report.relays} relay(s), ${report.iterations} iteration(s); ${report.totals.runs} runs, ${report.totals.kills} kills, ${report.totals.violations} violation(s), ${report.totals.notExercised} not exercised; ${(report.ms / 1000).toFixed(1)} s</p>
<p>Repeat every run (the seed fixes each run's kill points): <code class="repeat">${esc(repeat)}</code></p>
<p class="legend">${LEGEND}</p>
</header>
<nav><table><thead><tr><th>case</th><th>runs</th><th>kills</th><th>verdict</th></tr></thead><tbody>
${report.cases.map((c) => `<tr class="${verdictClass(c.verdict)}"><td>${esc(c.case)}</td><td>${c.runs}</td><td>${c.kills}</td><td>${esc(c.verdict)}</td></tr>`).join('\n')}
</tbody></table></nav>
<main>
${report.runs.map((run, i) => runSection(run, i, repeat)).join('\n')}
</main>
<script>${SCRIPT}</script>
</body></html>
`
}

function verdictClass(verdict: string): string {
  return verdict === 'pass' ? 'pass' : verdict === 'fail' ? 'fail' : 'not-exercised'
}

function runSection(run: RunResult, index: number, repeat: string): string {
  const witnesses = new Set(run.violations.flatMap((v) => v.witnesses.map(witnessId)))
  const kills = run.kills.map((k) => `${k.worker} at ${k.step}${k.ok ? '' : ' (not the armed step)'}`).join(', ') || 'none'
  return `<section class="run ${verdictClass(run.verdict)}" id="run-${index + 1}" data-case="${esc(run.case)}" data-iteration="${run.iteration}" data-verdict="${esc(run.verdict)}">
<h2>${index + 1}. ${esc(run.case)} #${run.iteration}: ${esc(run.verdict)} <small>${run.ms} ms</small></h2>
<p>armed: ${esc(run.armed.join(', ') || 'nothing')}; kills: ${esc(kills)}; events ${run.events}, deliveries ${run.deliveries}${run.note ? `; ${esc(run.note)}` : ''}</p>
${run.history ? timeline(run.history, run.ms, witnesses) : '<p class="no-history">no history recorded</p>'}
${run.violations.length ? violationList(run, repeat, index) : ''}
</section>`
}

/** A witness is an event id, or an id with a count ("0190… (x2)"), or a business key. */
const witnessId = (witness: string) => witness.split(' ')[0]

function violationList(run: RunResult, repeat: string, index: number): string {
  const items = run.violations.map(
    (v) =>
      `<li class="violation" data-invariant="${esc(v.invariant)}" data-witnesses="${esc(v.witnesses.map(witnessId).join(' '))}"><strong>${esc(v.invariant)}</strong> ${esc(v.message)} (${v.count})${
        v.witnesses.length ? `; witnesses: ${v.witnesses.map((w) => `<code class="witness-id" data-id="${esc(witnessId(w))}">${esc(w)}</code>`).join(' ')}` : ''
      }</li>`,
  )
  return `<ul class="violations">${items.join('\n')}</ul>
<p class="repeat-run">This is run ${index + 1} of the command: <code>${esc(repeat)}</code></p>`
}

/** Lanes in pipeline order: producer, relays, consumer, then the database. */
function laneOrder(history: HistoryEntry[]): string[] {
  const rank = (p: string) => (p === 'producer' ? 0 : p.startsWith('relay') ? 1 : p === 'consumer' ? 2 : p === 'database' ? 4 : 3)
  return [...new Set(history.map((e) => e.process))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
}

function timeline(history: HistoryEntry[], runMs: number, witnesses: Set<string>): string {
  const lanes = laneOrder(history)
  const span = Math.max(runMs, ...history.map((e) => e.at), 1)
  const x = (at: number) => LABEL + (Math.max(0, at) / span) * (WIDTH - LABEL - 10)
  const height = AXIS + lanes.length * LANE + 6
  const marked = (e: HistoryEntry) => (e.ids ?? []).some((id) => witnesses.has(id))
  const laneGroups = lanes.map((process, i) => {
    const y = AXIS + i * LANE
    const entries = history.filter((e) => e.process === process)
    return `<g class="lane" data-process="${esc(process)}" transform="translate(0 ${y})">
<rect class="lane-bg" x="${LABEL}" y="2" width="${WIDTH - LABEL - 10}" height="${LANE - 4}"/>
<text class="lane-label" x="4" y="${LANE / 2 + 4}">${esc(process)}</text>
${process === 'database' ? entries.map((e) => databaseMark(e, x, marked(e))).join('') : laneMarks(entries, x, marked)}
</g>`
  })
  return `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">
${axis(span, x)}
${laneGroups.join('\n')}
</svg>`
}

function axis(span: number, x: (at: number) => number): string {
  const step = [50, 100, 250, 500, 1000, 2000, 5000, 10_000, 30_000].find((s) => span / s <= 12) ?? 60_000
  const ticks: string[] = []
  for (let t = 0; t <= span; t += step) {
    ticks.push(`<line class="tick" x1="${x(t)}" x2="${x(t)}" y1="${AXIS - 6}" y2="100%"/><text class="tick-label" x="${x(t) + 2}" y="${AXIS - 9}">${t >= 1000 ? `${t / 1000} s` : `${t} ms`}</text>`)
  }
  return `<g class="axis">${ticks.join('')}</g>`
}

/** A worker's lane: an operation's bar from its invoke to its outcome; spawns, kills and exits as marks. */
function laneMarks(entries: HistoryEntry[], x: (at: number) => number, marked: (e: HistoryEntry) => boolean): string {
  const out: string[] = []
  const used = new Set<HistoryEntry>()
  for (const [i, e] of entries.entries()) {
    if (e.type === 'invoke') {
      const end = entries.slice(i + 1).find((o) => !used.has(o) && endsInvocation(e, o))
      if (end) used.add(end)
      out.push(bar(e, end, x, marked(e) || (end !== undefined && marked(end))))
    } else if (e.type === 'spawn' || e.type === 'kill' || e.type === 'exit') {
      out.push(lifecycle(e, x))
    }
  }
  // an outcome with no invoke seen (its line was cut short by the kill): a tick
  for (const e of entries) if (!used.has(e) && (e.type === 'ok' || e.type === 'fail' || e.type === 'unknown')) out.push(bar(e, e, x, marked(e)))
  return out.join('')
}

function bar(start: HistoryEntry, end: HistoryEntry | undefined, x: (at: number) => number, witness: boolean): string {
  const outcome = end?.type ?? 'open'
  const x1 = x(start.at)
  const width = Math.max(2, x(end?.at ?? start.at) - x1)
  const ids = [...new Set([...(start.ids ?? []), ...(end?.ids ?? [])])]
  const ms = end ? ` in ${Math.round(end.at - start.at)} ms` : ''
  const what = [start.op, start.detail, end?.detail && end.detail !== start.detail ? end.detail : undefined].filter(Boolean).join(' ')
  const tip = `${what}: ${outcome}${ms} at ${Math.round(start.at)} ms (pid ${start.pid ?? '?'})${ids.length ? `\n${ids.join('\n')}` : ''}`
  const classes = ['op', `op-${start.op}`, `outcome-${outcome}`, witness ? 'witness' : ''].filter(Boolean).join(' ')
  return `<rect class="${classes}" data-ids="${esc(ids.join(' '))}" x="${x1.toFixed(1)}" y="7" width="${width.toFixed(1)}" height="${LANE - 14}"><title>${esc(tip)}</title></rect>`
}

function lifecycle(e: HistoryEntry, x: (at: number) => number): string {
  const cx = x(e.at)
  const tip = esc(`${e.type} pid ${e.pid ?? '?'} at ${Math.round(e.at)} ms${e.detail ? `: ${e.detail}` : ''}`)
  if (e.type === 'kill') return `<g class="kill"><title>${tip}</title><path d="M${cx - 6} 5 L${cx + 6} ${LANE - 5} M${cx + 6} 5 L${cx - 6} ${LANE - 5}"/></g>`
  if (e.type === 'spawn') return `<path class="spawn" d="M${cx} 4 L${cx + 7} ${LANE / 2} L${cx} ${LANE - 4} Z"><title>${tip}</title></path>`
  return `<rect class="exit" x="${cx - 1}" y="3" width="2" height="${LANE - 6}"><title>${tip}</title></rect>`
}

function databaseMark(e: HistoryEntry, x: (at: number) => number, witness: boolean): string {
  const id = e.ids?.[0] ?? ''
  const classes = [`db-${e.type}`, witness ? 'witness' : ''].filter(Boolean).join(' ')
  const y = e.type === 'created' ? LANE / 2 - 5 : LANE / 2 + 5
  return `<circle class="${classes}" data-ids="${esc(id)}" cx="${x(e.at).toFixed(1)}" cy="${y}" r="3.5"><title>${esc(`${e.type === 'created' ? 'created_at' : 'published_at'} ${Math.round(e.at)} ms\n${id}`)}</title></circle>`
}

const LEGEND = [
  '<span class="key outcome-ok"></span> ok',
  '<span class="key outcome-fail"></span> fail',
  '<span class="key outcome-unknown"></span> unknown (the process died first)',
  '<span class="key kill-key">×</span> SIGKILL',
  '<span class="key spawn-key">▶</span> (re)start',
  '<span class="key db-created"></span> created_at',
  '<span class="key db-published"></span> published_at',
  '<span class="key witness-key"></span> an event a violation names',
  'hover a bar for its ids; click a witness id to find it on every lane',
].join(' &nbsp; ')

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#1d2430}
h1.ok{color:#1a7f37} h1.fail{color:#cf222e} h2{font-size:16px;margin:18px 0 4px} h2 small{color:#667;font-weight:normal}
code{background:#f2f4f7;padding:1px 4px;border-radius:3px}
nav table{border-collapse:collapse;margin:8px 0} nav td,nav th{border:1px solid #d0d7de;padding:2px 8px;text-align:left}
tr.fail td,section.fail h2{color:#cf222e} tr.not-exercised td,section.not-exercised h2{color:#9a6700}
section.run{border-top:1px solid #d0d7de;padding-top:4px} section.fail{background:#fff5f5}
.lane-bg{fill:#f6f8fa} .lane-label{font-size:12px;fill:#333}
.tick{stroke:#e1e4e8} .tick-label{font-size:10px;fill:#667}
.outcome-ok{fill:#2da44e} .outcome-fail{fill:#d4a72c} .outcome-unknown{fill:#8250df} .outcome-open{fill:#8c959f}
.op-publish.outcome-ok{fill:#218bff} .op-deliver.outcome-ok{fill:#1b7c83}
.kill path{stroke:#cf222e;stroke-width:2.5} .spawn{fill:#57606a} .exit{fill:#8c959f}
.db-created{fill:#fff;stroke:#218bff;stroke-width:1.5} .db-published{fill:#1b7c83}
.witness{stroke:#cf222e;stroke-width:2.5} .focus{stroke:#000;stroke-width:3}
.violations li{color:#cf222e;margin:2px 0} .witness-id{cursor:pointer;color:#cf222e}
.legend .key{display:inline-block;width:14px;height:10px;border-radius:2px;vertical-align:middle}
.legend .outcome-ok{background:#2da44e}.legend .outcome-fail{background:#d4a72c}.legend .outcome-unknown{background:#8250df}
.legend .db-created{border:1.5px solid #218bff;border-radius:50%;width:8px;height:8px}.legend .db-published{background:#1b7c83;border-radius:50%;width:9px;height:9px}
.legend .witness-key{border:2.5px solid #cf222e;width:10px;height:8px}
.legend .kill-key{color:#cf222e;font-weight:bold;width:auto}.legend .spawn-key{color:#57606a;width:auto}
`

// Clicking a witness id outlines everything that carries it, on every lane of its run.
const SCRIPT = `
document.querySelectorAll('.witness-id').forEach(function (el) {
  el.addEventListener('click', function () {
    var run = el.closest('section');
    run.querySelectorAll('.focus').forEach(function (f) { f.classList.remove('focus') });
    run.querySelectorAll('[data-ids]').forEach(function (m) {
      if (m.getAttribute('data-ids').split(' ').indexOf(el.getAttribute('data-id')) >= 0) m.classList.add('focus');
    });
  });
});
`
