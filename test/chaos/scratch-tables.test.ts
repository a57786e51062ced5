// chaos touches only what it made: it refuses a scratch name that is already taken (and then
// creates and drops nothing), and SIGTERM/SIGINT in the middle of a run kills the workers and
// drops that run's tables before exiting 143/130.
import {describe, expect, it} from 'vitest'
import {raw, sql} from '../../dialects/index.js'
import {openDb} from '../../src/db/index.js'
import {UsageError} from '../../src/core/errors.js'
import {loadScenario, scenarioContext} from '../../src/chaos/business-scenario.js'
import {createRunTables, dropRunTables, runTables} from '../../src/chaos/tables.js'
import {processesWith} from '../helpers/chaos-leftovers.js'
import {cliAsync} from '../helpers/cli.js'
import {until} from '../helpers/publishers.js'
import {sqliteUrl, targets} from '../helpers/targets.js'

const matrix = await targets()

for (const target of matrix) {
  describe.skipIf(!target.available)(`chaos scratch tables on ${target.dialect}`, () => {
    it.each([
      ['holds rows', 3],
      ['is empty', 0],
    ])('refuses a run whose scratch outbox table already exists and %s, creating and dropping nothing', async (_, rows) => {
      const db = await openDb(target.url)
      const prefix = `chaos_taken_${Math.random().toString(16).slice(2, 8)}`
      const t = runTables(prefix)
      const {scenario} = await loadScenario(undefined)
      const table = raw(db.dialect.render.quoteIdent(t.outbox.outbox))
      try {
        await db.execute(sql`CREATE TABLE ${table} (n INTEGER)`)
        for (let i = 0; i < rows; i++) await db.execute(sql`INSERT INTO ${table} (n) VALUES (${i})`)
        const refused = await createRunTables(db, t, scenario, scenarioContext(db.dialect, prefix, 3)).catch((e) => e)
        expect(refused).toBeInstanceOf(UsageError)
        expect(refused.message).toContain(`chaos scratch table ${t.outbox.outbox} already exists${rows ? ` and holds ${rows} row(s)` : ''}`)
        // the other tables of the run were not created, the taken one is untouched
        const inbox = await db.query(sql`SELECT COUNT(*) AS n FROM ${raw(db.dialect.render.quoteIdent(t.outbox.inbox))}`).catch((e) => e)
        expect(inbox).toBeInstanceOf(Error)
        const [row] = await db.query<{n: unknown}>(sql`SELECT COUNT(*) AS n FROM ${table}`)
        expect(Number(row.n)).toBe(rows)
      } finally {
        await dropRunTables(db, t, scenario)
        await db.close()
      }
    })
  })
}

describe.skipIf(process.platform !== 'linux')('chaos stopped by a signal', () => {
  it.each([
    ['SIGTERM', 143, []],
    ['SIGINT', 130, ['--json']],
  ] as const)('%s mid-run: workers killed, the run\'s scratch tables dropped, exit %i, no verdict %j', {timeout: 90_000}, async (signal, code, flags) => {
    const url = sqliteUrl()
    const file = url.slice('sqlite:'.length)
    const run = cliAsync(['chaos', '--url', url, '--seed', '11', ...flags])
    const db = await openDb(url)
    try {
      // a run is under way: its tables exist and its workers are up
      const scratch = () => db.query<{name: string}>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'chaos_%'`)
      await until(async () => (await scratch()).length > 0 && processesWith(file).length > 0, 60_000, 'a chaos run with live workers')
      run.child.kill(signal)
      const result = await run.done
      expect(result.status, result.stderr).toBe(code)
      expect(result.stderr).toContain(`chaos ${signal}: killing the workers and dropping the run's scratch tables`)
      expect(result.stderr).toMatch(/chaos interrupted after \d+ of \d+ run\(s\), no verdict; scratch tables dropped\. Repeat with --seed 11/)
      // --json: an error object with the same code, never an empty stdout a script could take for a pass
      if (flags.length > 0) expect(JSON.parse(result.stdout)).toEqual({error: {message: expect.stringMatching(/^chaos interrupted after/), exitCode: code}})
      expect(await scratch()).toEqual([])
      await until(() => processesWith(file).length === 0, 5000, 'no worker left')
    } finally {
      await db.close()
      run.child.kill('SIGKILL')
    }
  })
})
