// `outbox chaos --report`: the HTML report opened in a real browser (Debian's chromium, driven
// by playwright-core): a lane per process, kills marked, a failing run's violation listed with
// its witnesses and those events outlined on the lanes, and a click on a witness id finding it
// on every lane. The screenshot stays in test-artifacts/ (the README's CI example uploads it).
import {spawnSync} from 'node:child_process'
import {existsSync, mkdirSync, mkdtempSync, readFileSync, statSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

const root = new URL('../..', import.meta.url).pathname
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const available = existsSync(CHROMIUM)
if (!available) {
  if (process.env.CI) throw new Error(`chaos report test: no browser at ${CHROMIUM} (CI installs Debian's chromium in .ci/run)`)
  console.warn(`chaos report test skipped: no browser at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`)
}

describe.skipIf(!available)('outbox chaos --report in a browser', () => {
  it('draws a lane per process, marks the kill, and highlights a violation and its witnesses', {timeout: 120_000}, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'outbox-chaos-report-'))
    const file = join(dir, 'chaos.html')
    // a naive consumer (no inbox): the producer kill passes, the consumer kill after commit duplicates an effect
    const args = ['chaos', '--consumer', 'naive', '--steps', 'producer.after-commit,consumer.after-commit', '--scenarios', 'none', '--seed', '7', '--report', file]
    const r = spawnSync(process.execPath, [join(root, 'bin/run.js'), ...args], {encoding: 'utf8', timeout: 100_000, env: {...process.env, NO_COLOR: '1'}})
    expect(r.status, r.stderr).toBe(1)
    const html = readFileSync(file, 'utf8')
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/) // self-contained

    const {chromium} = await import('playwright-core')
    const browser = await chromium.launch({executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu']})
    try {
      const page = await browser.newPage({viewport: {width: 1200, height: 900}})
      await page.goto(`file://${file}`)
      const runs = page.locator('section.run')
      expect(await runs.count()).toBe(2)
      expect(await runs.nth(0).getAttribute('data-verdict')).toBe('pass')
      const failed = page.locator('section.run[data-verdict="fail"]')
      expect(await failed.getAttribute('data-case')).toBe('consumer.after-commit')
      const lanes = await failed.locator('g.lane').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-process')))
      expect(lanes).toEqual(['producer', 'relay#1', 'consumer', 'database'])
      // the consumer died by SIGKILL at its step and came back
      expect(await failed.locator('g.lane[data-process="consumer"] g.kill').count()).toBe(1)
      expect(await failed.locator('g.lane[data-process="consumer"] .spawn').count()).toBe(2)
      expect(await failed.locator('g.lane[data-process="relay#1"] rect.op-publish').count()).toBeGreaterThan(0)

      const violation = failed.locator('li.violation[data-invariant="effect-once"]')
      expect(await violation.count()).toBe(1)
      const witness = (await violation.getAttribute('data-witnesses'))!.split(' ')[0]
      expect(witness).toMatch(/^[0-9a-f-]{36}$/)
      // outlined in red wherever the event shows: both deliveries on the consumer's lane, its rows in the database
      const outlined = failed.locator(`.witness[data-ids~="${witness}"]`)
      expect(await failed.locator(`g.lane[data-process="consumer"] .witness[data-ids~="${witness}"]`).count()).toBeGreaterThanOrEqual(2)
      expect(await failed.locator(`g.lane[data-process="database"] .witness[data-ids~="${witness}"]`).count()).toBeGreaterThanOrEqual(1)
      expect(await outlined.first().evaluate((el) => getComputedStyle(el).stroke)).toBe('rgb(207, 34, 46)')
      // the passing run outlines nothing
      expect(await runs.nth(0).locator('.witness').count()).toBe(0)

      await violation.locator(`code.witness-id[data-id="${witness}"]`).click()
      const focused = await failed.locator('.focus').evaluateAll((els) => els.map((el) => el.getAttribute('data-ids')))
      expect(focused.length).toBeGreaterThanOrEqual(3)
      for (const ids of focused) expect(ids!.split(' ')).toContain(witness)
      // the command that repeats the run, seed included
      expect(await page.locator('code.repeat').textContent()).toContain('--consumer naive --steps producer.after-commit,consumer.after-commit --scenarios none --seed 7')

      const artifacts = join(root, 'test-artifacts')
      mkdirSync(artifacts, {recursive: true})
      const shot = join(artifacts, 'chaos-report.png')
      await page.screenshot({path: shot, fullPage: true})
      expect(statSync(shot).size).toBeGreaterThan(10_000)
    } finally {
      await browser.close()
    }
  })
})
