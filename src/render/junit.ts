// JUnit XML for CI (GitHub Actions, GitLab): one testcase per step x scenario; a failure
// carries the violations and their witnesses, or why the case was not exercised.
import type {ChaosReport} from '../chaos/report.js'

function esc(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    // XML 1.0 forbids most control characters
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
}

export function renderJunit(report: ChaosReport): string {
  const suite = `outbox chaos (${report.dialect}, ${report.strategy}, ${report.consumer})`
  const failures = report.cases.filter((c) => c.verdict !== 'pass').length
  const cases = report.cases.map((c) => {
    const runs = report.runs.filter((r) => r.case === c.case)
    const time = (runs.reduce((n, r) => n + r.ms, 0) / 1000).toFixed(3)
    const head = `    <testcase classname="outbox.chaos.${report.dialect}" name="${esc(c.case)}" time="${time}">`
    const props = `runs=${c.runs} kills=${c.kills} orders=${c.aggregates} events=${c.events} deliveries=${c.deliveries} duplicate_deliveries=${c.duplicateDeliveries} duplicate_effects=${c.duplicateEffects} lost=${c.lost} phantom=${c.phantom} stuck=${c.stuck}`
    if (c.verdict === 'pass') return `${head}\n      <system-out>${esc(props)}</system-out>\n    </testcase>`
    const detail = [
      ...c.violations.map((v) => `${v.invariant}: ${v.message}: ${v.count}${v.witnesses.length ? `\n  witnesses: ${v.witnesses.join(', ')}` : ''}`),
      ...(c.verdict === 'not exercised' ? c.notes.map((n) => `not exercised: ${n}`) : []),
      props,
      `repeat with: outbox chaos --seed ${report.seed}`,
    ].join('\n')
    const first = c.violations[0]
    const message = first ? `${first.invariant}: ${first.message} (${first.count})` : `not exercised: ${c.notes[0] ?? ''}`
    const type = first ? first.invariant : 'not-exercised'
    return `${head}\n      <failure message="${esc(message)}" type="${esc(type)}">${esc(detail)}</failure>\n    </testcase>`
  })
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="outbox chaos" tests="${report.cases.length}" failures="${failures}" time="${(report.ms / 1000).toFixed(3)}">`,
    `  <testsuite name="${esc(suite)}" tests="${report.cases.length}" failures="${failures}" errors="0" skipped="0" time="${(report.ms / 1000).toFixed(3)}">`,
    `    <properties><property name="seed" value="${report.seed}"/><property name="database" value="${esc(report.database)}"/><property name="broker" value="${esc(report.broker)}"/></properties>`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n')
}
