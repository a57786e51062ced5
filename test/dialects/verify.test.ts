// `outbox verify` on every dialect, from code and from the CLI, and proof that it fails when
// the claim is wrong: each broken claim below must turn the matching check red.
import {spawn, spawnSync} from 'node:child_process'
import {describe, expect, it} from 'vitest'
import {DIALECTS, raw, sql} from '../../dialects/index.js'
import {openDb} from '../../src/db/index.js'
import {verify} from '../../src/verify/run.js'
import type {VerifyReport} from '../../src/verify/types.js'
import {articleClaim, forgettingTheMark, ignoringLeases, NESTED_LOOP_SETTINGS, withoutIndex, withoutSkipLocked} from '../helpers/broken-claims.js'
import {sqliteUrl, targets} from '../helpers/targets.js'

const matrix = await targets()
const NOT_APPLICABLE = {postgres: ['index'], mysql: [], sqlite: ['isolation', 'index', 'producer']}
const byId = (report: VerifyReport) => Object.fromEntries(report.checks.map((c) => [c.check, c]))

async function scratchExists(url: string, table: string): Promise<boolean> {
  const db = await openDb(url, {poolSize: 1})
  try {
    const rows = await db.query(db.dialect.ddl.existingObjects({outbox: table, inbox: `${table}_in`, archive: `${table}_ar`}))
    return rows.length > 0
  } finally {
    await db.close()
  }
}

function cli(args: string[]) {
  const r = spawnSync(process.execPath, ['bin/run.js', ...args], {encoding: 'utf8', env: {...process.env, NO_COLOR: '1'}})
  return {status: r.status, stdout: r.stdout, stderr: r.stderr}
}

for (const target of matrix) {
  describe.skipIf(!target.available)(`verify on ${target.dialect}`, () => {
    it('passes every check with the dialect claim and drops its scratch table', async () => {
      const report = await verify(target.url, {events: 300})
      const checks = byId(report)
      expect(report.checks.map((c) => c.check)).toEqual(['server', 'isolation', 'claimers', 'second-session', 'lease', 'carried-mark', 'limit', 'index', 'producer'])
      for (const c of report.checks) {
        expect(c.status, `${c.check}: ${c.detail}`).toBe(NOT_APPLICABLE[target.dialect].includes(c.check) ? 'skip' : 'pass')
      }
      expect(checks.claimers.detail).toMatch(/claimed 300 events .* 0 double claims/)
      expect(report.ok).toBe(true)
      expect(report.scratchTable).toMatch(/^outbox_verify_[0-9a-f]{8}$/)
      expect(await scratchExists(target.url, report.scratchTable)).toBe(false)
    })

    it('fails the carried-mark check when the claim drops the mark it carries', async () => {
      const report = await verify(target.url, {only: ['carried-mark'], claimPlan: forgettingTheMark(DIALECTS[target.dialect])})
      expect(byId(report)['carried-mark']).toMatchObject({status: 'fail'})
      expect(byId(report)['carried-mark'].detail).toMatch(/claimed 2 of them again|left 0 of them published/)
    })

    it('fails the claimers and lease checks when the claim ignores live leases', async () => {
      const report = await verify(target.url, {events: 100, claimers: 3, only: ['claimers', 'lease'], claimPlan: ignoringLeases(DIALECTS[target.dialect])})
      const checks = byId(report)
      expect(report.ok).toBe(false)
      expect(checks.claimers.status).toBe('fail')
      expect(checks.claimers.detail).toMatch(/claimed twice while their leases were live/)
      expect(checks.lease.status).toBe('fail')
      expect(checks.lease.detail).toMatch(/a live lease was taken over/)
      expect(await scratchExists(target.url, report.scratchTable)).toBe(false)
    })

    it.skipIf(target.dialect === 'sqlite')('fails the second-session check when the claim waits instead of skipping locked rows', async () => {
      const report = await verify(target.url, {only: ['second-session'], claimPlan: withoutSkipLocked(DIALECTS[target.dialect])})
      expect(byId(report)['second-session']).toMatchObject({status: 'fail'})
      expect(byId(report)['second-session'].detail).toMatch(/waited on the first session's locked rows/)
    })

    it('the CLI prints JSON, exits 0, and a table without --json', () => {
      const json = cli(['verify', '--url', target.url, '--events', '100', '--json'])
      expect(json.stderr).toBe('')
      expect(json.status).toBe(0)
      const checks = JSON.parse(json.stdout) as {check: string; ok: boolean; status: string}[]
      expect(checks).toHaveLength(9)
      expect(checks.every((c) => c.ok)).toBe(true)
      if (target.dialect !== 'postgres') return // one table rendering is enough
      const text = cli(['verify', '--url', target.url, '--events', '100', '--claimers', '2'])
      expect(text.status).toBe(0)
      expect(text.stdout).toMatch(/│ concurrent claimers, no double claim\s+│ PASS\s+│ 2 connections claimed 100 events/)
      expect(text.stdout).toMatch(/verify passed on postgres .*; scratch table outbox_verify_[0-9a-f]{8} dropped/)
    })
  })
}

const pg = matrix.find((t) => t.dialect === 'postgres')!
describe.skipIf(!pg.available)('verify on postgres: LIMIT under the plan stale statistics lead to', () => {
  it("fails with the article's IN (SELECT ... LIMIT ... SKIP LOCKED) claim, passes with the dialect's", async () => {
    const broken = await verify(pg.url, {only: ['limit'], claimPlan: articleClaim, sessionSetup: NESTED_LOOP_SETTINGS})
    expect(byId(broken).limit.status).toBe('fail')
    const leased = Number(/leased (\d+) rows/.exec(byId(broken).limit.detail)?.[1])
    expect(leased).toBeGreaterThan(2)
    const good = await verify(pg.url, {only: ['limit'], sessionSetup: NESTED_LOOP_SETTINGS})
    expect(byId(good).limit).toMatchObject({status: 'pass'})
  })
})

const my = matrix.find((t) => t.dialect === 'mysql')!
describe.skipIf(!my.available)('verify on mysql: isolation, index and producer checks can fail', () => {
  it('fails isolation and producer at REPEATABLE READ (gap locks block the INSERT)', async () => {
    const report = await verify(my.url, {only: ['isolation', 'producer'], sessionSetup: [sql`${raw('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ')}`]})
    const checks = byId(report)
    expect(checks.isolation.status).toBe('fail')
    expect(checks.isolation.detail).toMatch(/REPEATABLE-READ, not READ COMMITTED/)
    expect(checks.producer.status).toBe('fail')
    expect(checks.producer.detail).toMatch(/waited on the claim's locks/)
  })

  it('fails the index check when the claim cannot use an index, and a second relay then gets nothing', async () => {
    const report = await verify(my.url, {only: ['index', 'second-session'], claimPlan: withoutIndex(DIALECTS.mysql)})
    const checks = byId(report)
    expect(checks.index.status).toBe('fail')
    expect(checks.index.detail).toMatch(/filesort|full table scan/)
    expect(checks['second-session'].status).toBe('fail')
  })

})

describe.skipIf(!pg.available)('verify CLI on a database that defaults to REPEATABLE READ', () => {
  // A real misconfiguration, on a role of its own so the shared test database is untouched.
  const role = `outbox_verify_rr_${process.pid}`
  const url = pg.url.replace(/\/\/[^@/]*@/, `//${role}:s3cret-pw@`)

  it('exits 1, names the failing check on stderr, never echoes the password, drops the scratch table', async () => {
    const admin = await openDb(pg.url, {poolSize: 1})
    const run = (text: string) => admin.execute(sql`${raw(text)}`)
    try {
      await run(`CREATE ROLE ${role} LOGIN`)
      await run(`ALTER ROLE ${role} SET default_transaction_isolation = 'repeatable read'`)
      await run(`CREATE SCHEMA ${role} AUTHORIZATION ${role}`)
      const r = cli(['verify', '--url', url, '--schema', role, '--events', '50'])
      expect(r.status).toBe(1)
      expect(r.stdout).toMatch(/READ COMMITTED in effect\s+│ FAIL/)
      expect(r.stderr).toMatch(/^outbox: verify failed: READ COMMITTED in effect: claim transactions run at repeatable read, not READ COMMITTED/m)
      expect(r.stdout + r.stderr).not.toContain('s3cret-pw')
      const left = await admin.query(sql`SELECT tablename FROM pg_tables WHERE schemaname = ${role}`)
      expect(left).toEqual([])
    } finally {
      await run(`DROP SCHEMA IF EXISTS ${role} CASCADE`).catch(() => {})
      await run(`DROP ROLE IF EXISTS ${role}`).catch(() => {})
      await admin.close()
    }
  })
})

describe('verify CLI interrupted', () => {
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    it(`${signal} stops it, drops the scratch table and exits ${code}`, async () => {
      const url = sqliteUrl() // a file of its own: any outbox_verify_ table in it is this run's
      const db = await openDb(url, {poolSize: 1}) // verify needs the file to exist
      const child = spawn(process.execPath, ['bin/run.js', 'verify', '--url', url, '--events', '20000'], {env: {...process.env, NO_COLOR: '1'}})
      let stderr = ''
      child.stderr.on('data', (d) => (stderr += d))
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
      const scratch = () => db.query<{name: string}>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'outbox_verify_%'`)
      try {
        while ((await scratch()).length === 0) {
          if (child.exitCode !== null) throw new Error(`verify ended before it created its table: ${stderr}`)
          await new Promise((r) => setTimeout(r, 20))
        }
        child.kill(signal)
        expect(await exited).toBe(code)
        expect(stderr).toMatch(new RegExp(`^outbox: ${signal}: stopping; dropping the scratch table`, 'm'))
        expect(stderr).toMatch(/^outbox: verify was interrupted. The scratch table was dropped/m)
        expect(await scratch()).toEqual([])
      } finally {
        child.kill('SIGKILL')
        await db.close()
      }
    })
  }
})

describe('server check', () => {
  it('says plainly that a server without SKIP LOCKED cannot run the claim', () => {
    for (const [dialect, version] of [
      ['mysql', '5.7.44-log'],
      ['mysql', '8.0.0-dmr'],
      ['mysql', '10.5.23-MariaDB-0+deb11u1'],
      ['postgres', '9.4.26'],
      ['postgres', '11.22'],
      ['sqlite', '3.34.1'],
    ] as const) {
      const support = DIALECTS[dialect].verify.claimSupport(version)
      expect(support.ok, version).toBe(false)
      expect(support.detail).toMatch(/has no (SKIP LOCKED|FOR UPDATE SKIP LOCKED|UPDATE \.\.\. RETURNING|WITH \.\.\. AS MATERIALIZED) \(needs [\d.]+\+\)/)
    }
    for (const [dialect, version] of [
      ['mysql', '8.0.36'],
      ['mysql', '10.6.0-MariaDB'],
      ['mysql', '11.4.2-MariaDB'],
      ['postgres', '12.0'],
      ['postgres', '15.20 (Debian 15.20-0+deb12u1)'],
      ['sqlite', '3.35.0'],
    ] as const) {
      expect(DIALECTS[dialect].verify.claimSupport(version).ok, version).toBe(true)
    }
  })
})
