// A partitioned outbox on both servers: init --partition-by, rows past the last range landing
// in the catch-all, partitions --ensure (twice, from two processes at once, with rows in the
// catch-all), and init's refusal to convert an unpartitioned outbox, whose printed steps do.
import {readFileSync} from 'node:fs'
import Ajv from 'ajv'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql, type TableNames} from '../../dialects/index.js'
import {openDb, type Db} from '../../src/db/index.js'
import {cli, cliAsync} from '../helpers/cli.js'
import {insertRows} from '../helpers/rows.js'
import {closeTables, openTables} from '../helpers/tables.js'
import {sqliteUrl, targets, uniqueTables} from '../helpers/targets.js'

const DAY = 86_400

interface Listed {
  interval: string
  lastEndsAt: string
  partitions: {name: string; from: string | null; to: string | null; catchAll: boolean; rows: number; oldestUnpublished: string | null}[]
}

const matrix = await targets(['postgres', 'mysql'])
const schema = new Ajv({strict: true, allowUnionTypes: true, validateFormats: false}).compile(
  JSON.parse(readFileSync(new URL('../../schemas/output/partitions.schema.json', import.meta.url), 'utf8')),
)

/** stdout parsed, and valid against the schema the package ships for partitions --json */
function parsed<T>(stdout: string): T {
  const output = JSON.parse(stdout)
  expect(schema(output), JSON.stringify(schema.errors)).toBe(true)
  return output
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`partitioned outbox on ${target.dialect}`, () => {
    const flags = (names: TableNames) => ['--url', target.url, '--table', names.outbox, '--inbox-table', names.inbox, '--archive-table', names.archive]
    const list = (names: TableNames): Listed => {
      const r = cli(['partitions', ...flags(names), '--json'])
      expect(r.status, r.stderr).toBe(0)
      return parsed(r.stdout)
    }
    const ensure = (names: TableNames, ...more: string[]) => {
      const r = cli(['partitions', ...flags(names), '--ensure', ...more, '--json'])
      expect(r.status, r.stderr).toBe(0)
      return parsed<{added: {name: string; from: string; to: string}[]; movedRows: number; lastEndsAt: string}>(r.stdout)
    }
    const opened: {db: Db; names: TableNames}[] = []
    const open = async (prefix: string, partitionBy?: 'day' | 'week' | 'month') => {
      const t = await openTables(target.url, prefix, {inbox: true, archive: true, partitionBy})
      opened.push(t)
      return t
    }
    const now = async (db: Db) => db.dialect.render.parseTime((await db.query(sql`SELECT ${raw(db.dialect.render.now)} AS now`))[0].now) as Date
    afterAll(async () => {
      for (const t of opened) await closeTables(t.db, t.names)
    })

    it('init --partition-by day --apply: ranges from today to a week ahead and a catch-all; a second run changes nothing', async () => {
      const names = uniqueTables(`pi${target.dialect.slice(0, 2)}`)
      const db = await openDb(target.url, {poolSize: 1})
      try {
        const first = cli(['init', ...flags(names), '--apply', '--partition-by', 'day'])
        expect(first.status, first.stderr).toBe(0)
        expect(first.stdout).toMatch(new RegExp(`^created  table ${names.outbox}$`, 'm'))
        const again = cli(['init', ...flags(names), '--apply', '--partition-by', 'day'])
        expect(again.status, again.stderr).toBe(0)
        expect(again.stdout).toMatch(/up to date: nothing changed\n$/)

        const listed = list(names)
        expect(listed.interval).toBe('day')
        const ranges = listed.partitions.filter((p) => !p.catchAll)
        expect(listed.partitions.at(-1)!.catchAll).toBe(true)
        expect(ranges).toHaveLength(8)
        const today = new Date(await now(db))
        today.setUTCHours(0, 0, 0, 0)
        expect(ranges[0].to).toBe(new Date(today.getTime() + DAY * 1000).toISOString())
        expect(listed.lastEndsAt).toBe(new Date(today.getTime() + 8 * DAY * 1000).toISOString())
        for (let i = 1; i < ranges.length; i++) expect(ranges[i].from).toBe(ranges[i - 1].to)

        const status = cli(['status', ...flags(names), '--json'])
        expect(status.status, status.stderr).toBe(0)
        expect(JSON.parse(status.stdout).partitions).toMatchObject({lastEndsAt: listed.lastEndsAt, warning: null})
      } finally {
        await closeTables(db, names)
      }
    })

    it('an event past the last range lands in the catch-all; --ensure --dry-run plans, --ensure moves it, a second --ensure adds nothing', async () => {
      const {db, names} = await open('pe', 'day')
      const at = await now(db)
      const [near, far] = await insertRows(db, names, at, [{created: 20 * DAY}, {created: 40 * DAY}])
      const before = list(names)
      expect(before.partitions.at(-1)).toMatchObject({catchAll: true, rows: 2})

      const plan = ensure(names, '25d', '--dry-run')
      expect(plan.movedRows).toBe(1)
      expect(plan.added.length).toBeGreaterThanOrEqual(17)
      expect(list(names)).toEqual(before)

      const done = ensure(names, '25d')
      expect(done.added.map((p) => p.name)).toEqual(plan.added.map((p) => p.name))
      expect(done.movedRows).toBe(1)
      const after = list(names)
      expect(after.lastEndsAt).toBe(plan.added.at(-1)!.to)
      expect(after.partitions.at(-1)).toMatchObject({catchAll: true, rows: 1})
      const holding = after.partitions.filter((p) => !p.catchAll && p.rows > 0)
      expect(holding).toHaveLength(1)
      expect(new Date(holding[0].oldestUnpublished!).getTime()).toBe(at.getTime() + 20 * DAY * 1000)
      const rows = await db.query(sql`SELECT id FROM ${raw(db.dialect.render.table(names, 'outbox'))} ORDER BY created_at`)
      expect(rows.map((r) => String(r.id))).toEqual([near, far])

      const twice = ensure(names, '25d')
      expect(twice).toMatchObject({added: [], movedRows: 0, lastEndsAt: after.lastEndsAt})
      expect(list(names)).toEqual(after)
    })

    it('two --ensure at once (two processes): both exit 0, every range is added once, the catch-all rows move', async () => {
      const {db, names} = await open('pc', 'day')
      await insertRows(db, names, await now(db), [10, 11, 12, 13, 14].map((d) => ({created: d * DAY + 60})))
      const runs = await Promise.all([0, 1].map(() => cliAsync(['partitions', ...flags(names), '--ensure', '30d', '--json']).done))
      for (const r of runs) expect(r.status, r.stderr).toBe(0)
      const results = runs.map((r) => JSON.parse(r.stdout) as {added: {name: string}[]; movedRows: number})
      const added = results.flatMap((r) => r.added.map((p) => p.name))
      expect(new Set(added).size).toBe(added.length)
      expect(results.map((r) => r.added.length).sort((a, b) => a - b)[0]).toBe(0)
      expect(results.reduce((n, r) => n + r.movedRows, 0)).toBe(5)
      const after = list(names)
      const ranges = after.partitions.filter((p) => !p.catchAll)
      for (let i = 1; i < ranges.length; i++) expect(ranges[i].from).toBe(ranges[i - 1].to)
      expect(after.partitions.at(-1)).toMatchObject({catchAll: true, rows: 0})
      expect(ranges.reduce((n, p) => n + p.rows, 0)).toBe(5)
    })

    it('status warns when the last range ends within 3 days (exit 0, --json partitions.warning); --ensure clears it', async () => {
      const {db, names} = await open('pw', 'day')
      const ranges = list(names).partitions.filter((p) => !p.catchAll)
      // keep today's and tomorrow's ranges only: the last one ends in at most 2 days
      const table = raw(db.dialect.render.table(names, 'outbox'))
      for (const p of ranges.slice(2)) {
        const partition = raw(db.dialect.render.quoteIdent(p.name))
        await db.execute(target.dialect === 'postgres' ? sql`DROP TABLE ${partition}` : sql`ALTER TABLE ${table} DROP PARTITION ${partition}`)
      }
      const warned = cli(['status', ...flags(names), '--json'])
      expect(warned.status, warned.stderr).toBe(0)
      const warning = JSON.parse(warned.stdout).partitions.warning
      expect(warning).toMatch(new RegExp(`^the last partition of ${names.outbox} ends within 3 days \\(${ranges[1].to}\\): .*outbox partitions --ensure 14d`))
      expect(warned.stderr).toBe(`outbox: warning: ${warning}\n`)
      ensure(names, '14d')
      const clear = cli(['status', ...flags(names), '--json'])
      expect(clear.stderr).toBe('')
      expect(JSON.parse(clear.stdout).partitions.warning).toBeNull()
    })

    it('week and month ranges: listed with their interval, --ensure continues them', async () => {
      for (const interval of ['week', 'month'] as const) {
        const {names} = await open(`p${interval[0]}`, interval)
        const listed = list(names)
        expect(listed.interval).toBe(interval)
        const done = ensure(names, '70d')
        expect(done.added.length).toBeGreaterThan(0)
        for (const p of done.added) expect(new Date(p.from).getUTCDay() === 1 || new Date(p.from).getUTCDate() === 1).toBe(true)
        expect(new Date(done.lastEndsAt).getTime()).toBeGreaterThan(Date.now() + 70 * DAY * 1000 - 60_000)
      }
    })

    it('init --partition-by on an existing unpartitioned outbox: exit 2, nothing changed, the printed steps migrate it', async () => {
      const {db, names} = await open('pm')
      const ids = await insertRows(db, names, await now(db), [{created: -60}, {created: -30, published: -10}, {created: -5}])
      const r = cli(['init', ...flags(names), '--apply', '--partition-by', 'day'])
      expect(r.status).toBe(2)
      expect(r.stderr).toBe(`outbox: the outbox table ${names.outbox} exists and is not partitioned: init does not convert it. Migrate it with the steps printed above (new table, copy, swap)\n`)
      expect(r.stdout).toContain('INSERT INTO')
      const unpartitioned = cli(['partitions', ...flags(names)])
      expect(unpartitioned.status).toBe(2)
      expect(unpartitioned.stderr).toContain(`the outbox table ${names.outbox} is not partitioned`)

      // the steps, statement by statement, as a database client would run them
      const statements = r.stdout
        .split(/;\n/)
        .map((s) => s.replace(/^--.*$/gm, '').trim())
        .filter((s) => s && !/^(BEGIN|COMMIT)$/.test(s))
      await db.transaction(async (tx) => {
        for (const statement of statements) await tx.execute(sql`${raw(statement)}`)
      })
      const listed = list(names)
      expect(listed.interval).toBe('day')
      expect(listed.partitions.reduce((n, p) => n + p.rows, 0)).toBe(3)
      const moved = await db.query(sql`SELECT id FROM ${raw(db.dialect.render.table(names, 'outbox'))} ORDER BY created_at`)
      expect(moved.map((row) => String(row.id))).toEqual(ids)
      // init on the migrated table finds it as init --partition-by makes it
      const again = cli(['init', ...flags(names), '--apply', '--partition-by', 'day'])
      expect(again.status, again.stderr).toBe(0)
      expect(again.stdout).toMatch(/up to date: nothing changed\n$/)
      await db.execute(sql`DROP TABLE IF EXISTS ${raw(db.dialect.render.table({...names, outbox: `${names.outbox}_unpartitioned`}, 'outbox'))}`)
    })
  })
}

describe('partitioning where the database cannot', () => {
  let url: string
  beforeAll(() => {
    url = sqliteUrl()
    expect(cli(['init', '--url', url, '--apply']).status).toBe(0)
  })

  it('SQLite: init --partition-by and partitions refuse with one line, exit 2', () => {
    for (const args of [
      ['init', '--dialect', 'sqlite', '--partition-by', 'day'],
      ['init', '--url', url, '--apply', '--partition-by', 'week'],
      ['partitions', '--url', url],
      ['partitions', '--url', url, '--ensure', '14d'],
    ]) {
      const r = cli(args)
      expect(r.status, args.join(' ')).toBe(2)
      expect(r.stderr).toMatch(/^outbox: SQLite cannot partition the outbox\. [^\n]+\n$/)
      expect(r.stdout).toBe('')
    }
  })

  it('bad input: an unknown interval, --dry-run without --ensure, a bad duration', () => {
    for (const args of [
      ['init', '--dialect', 'postgres', '--partition-by', 'year'],
      ['partitions', '--url', url, '--dry-run'],
      ['partitions', '--url', url, '--ensure', 'soon'],
    ]) {
      const r = cli(args)
      expect(r.status, args.join(' ')).toBe(2)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
    }
  })
})
