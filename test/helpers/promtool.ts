// `promtool check metrics`: Prometheus's own parser and linter for the text exposition.
// Debian's prometheus package ships it (.ci/run installs it); missing, the checks are skipped
// locally with a clear message and fail the run in CI.
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

const found = spawnSync('promtool', ['--version']).status === 0
if (!found) {
  const hint = 'promtool not found (apt-get install --no-install-recommends prometheus)'
  if (process.env.CI === 'true') throw new Error(`${hint}: required in CI`)
  console.warn(`[outbox tests] SKIPPING promtool checks: ${hint}`)
}

export const promtoolAvailable = found

/** promtool's verdict on an exposition: ok, or its complaints (parse errors and lint findings). */
export function promtoolCheck(text: string): {ok: boolean; output: string} {
  // promtool accepts an empty input: an empty scrape is never what a test means to check
  if (!text.trim()) return {ok: false, output: 'empty exposition'}
  const r = spawnSync('promtool', ['check', 'metrics'], {input: text, encoding: 'utf8'})
  return {ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim()}
}

/**
 * `promtool check rules` on PromQL expressions, each made a recording rule: Prometheus's own
 * query parser. The rule file is JSON, which is YAML too.
 */
export function promtoolCheckQueries(exprs: string[]): {ok: boolean; output: string} {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-promql-'))
  try {
    const rules = exprs.map((expr, i) => ({record: `outbox:query_${i}`, expr}))
    writeFileSync(join(dir, 'rules.yml'), JSON.stringify({groups: [{name: 'queries', rules}]}))
    const r = spawnSync('promtool', ['check', 'rules', join(dir, 'rules.yml')], {encoding: 'utf8'})
    return {ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim()}
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
}
