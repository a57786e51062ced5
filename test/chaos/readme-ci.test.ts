// The README's CI example (GitHub Actions) as a user copies it: its chaos step writes the HTML
// report, a later step uploads it as an artifact even when chaos failed (if: always()), and
// the step's command line runs: from a folder holding chaos-scenario.js (the README's example
// module), against the test server, narrowed to one step so it stays short; it exits 0 and
// leaves report.xml and chaos.html where the upload steps look for them.
import {spawnSync} from 'node:child_process'
import {copyFileSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {BIN} from '../helpers/cli.js'
import {targets} from '../helpers/targets.js'

const root = new URL('../..', import.meta.url).pathname
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const workflow = /```yaml\n(# \.github\/workflows\/chaos\.yml\n[\s\S]*?)```/.exec(readme)?.[1] ?? ''
/** the workflow's steps, each as its lines */
const steps = workflow.split(/\n(?=\s+- (?:uses|run):)/).slice(1)
const chaosStep = steps.findIndex((s) => /run: npx outbox chaos /.test(s))
const [pg] = await targets(['postgres'])

describe("the README's GitHub Actions example", () => {
  it('writes --report chaos.html and uploads it as an artifact, if: always()', () => {
    expect(workflow).not.toBe('')
    expect(chaosStep).toBeGreaterThanOrEqual(0)
    expect(steps[chaosStep]).toMatch(/--report chaos\.html(\s|$)/)
    const upload = steps.slice(chaosStep + 1).find((s) => /uses: actions\/upload-artifact@v\d+/.test(s))
    expect(upload).toBeDefined()
    expect(upload).toMatch(/\n\s+if: always\(\)/)
    expect(upload).toMatch(/path: chaos\.html\b/)
  })

  it.skipIf(!pg.available)('its chaos command line runs (one step, the test server) and leaves both reports', {timeout: 150_000}, () => {
    const line = /run: npx outbox chaos (.*)/.exec(steps[chaosStep])![1]
    const args = line.split(/\s+/).map((a) => (a.startsWith('postgres://') ? pg.url : a))
    const dir = mkdtempSync(join(tmpdir(), 'outbox-readme-ci-'))
    try {
      copyFileSync(join(root, 'examples/chaos-scenario.js'), join(dir, 'chaos-scenario.js'))
      const r = spawnSync(process.execPath, [BIN, 'chaos', ...args, '--steps', 'relay.after-send', '--scenarios', 'none'], {cwd: dir, encoding: 'utf8', timeout: 140_000, env: {...process.env, NO_COLOR: '1'}})
      expect(r.status, r.stderr).toBe(0)
      expect(readFileSync(join(dir, 'report.xml'), 'utf8')).toContain('<testsuite')
      expect(readFileSync(join(dir, 'chaos.html'), 'utf8')).toMatch(/^<!doctype html>[\s\S]*relay\.after-send[\s\S]*<\/html>\s*$/i)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })
})
