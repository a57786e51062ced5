// The README's consumer examples run as written, against real PostgreSQL: the library's
// `new Consumer(pool, ...)` block (taken from README.md, its import pointed at this checkout),
// and the `outbox consume --handler billing.mjs` module under the built CLI. Both get the pg
// client inside the inbox transaction; both run in a schema of their own (search_path), where
// the README's default table names and its `accounts` table cannot meet another file's.
import {randomBytes} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {raw, sql} from '../../dialects/index.js'
import type {ConsumedEvent} from '../../src/consume/event.js'
import {uuidv7} from '../../src/core/uuid.js'
import {openDb, type Db} from '../../src/db/index.js'
import {applyInit} from '../../src/schema/init.js'
import {DEFAULT_TABLES} from '../../src/schema/tables.js'
import {cliAsync} from '../helpers/cli.js'
import {until} from '../helpers/publishers.js'
import {PG_URL, targets} from '../helpers/targets.js'

const [pg] = await targets(['postgres'])
const root = new URL('../..', import.meta.url).pathname
const readme = readFileSync(join(root, 'README.md'), 'utf8')

/** The README's fenced block of `lang` that contains `marker`, as written. */
function block(lang: string, marker: string): string {
  const found = [...readme.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]).filter((code) => code.includes(marker))
  expect(found, `one ${lang} block with ${marker} in README.md`).toHaveLength(1)
  return found[0]
}

describe.skipIf(!pg.available)("the README's consumer examples, on PostgreSQL", () => {
  const schema = `readme_${randomBytes(3).toString('hex')}`
  const url = `${PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
  const tmp = mkdtempSync(join(tmpdir(), 'outbox-readme-'))
  const moduleFile = join(root, 'test/app', `.readme-consumer-${randomBytes(3).toString('hex')}.ts`)
  let db: Db

  beforeAll(async () => {
    const admin = await openDb(PG_URL)
    await admin.execute(sql`CREATE SCHEMA ${raw(schema)}`)
    await admin.close()
    db = await openDb(url)
    await applyInit(db, DEFAULT_TABLES, {inbox: true, archive: false})
    await db.execute(sql`CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL)`)
    await db.execute(sql`INSERT INTO accounts (id, balance) VALUES ('acc-lib', 0), ('acc-cli', 0)`)
  })
  afterAll(async () => {
    rmSync(moduleFile, {force: true})
    rmSync(tmp, {recursive: true, force: true})
    await db?.close()
    const admin = await openDb(PG_URL)
    await admin.execute(sql`DROP SCHEMA IF EXISTS ${raw(schema)} CASCADE`)
    await admin.close()
  })

  const balance = async (id: string) => Number((await db.query<{balance: number}>(sql`SELECT balance FROM accounts WHERE id = ${id}`))[0].balance)

  it('new Consumer(pool, ...): applied once, a redelivery skipped, an older version stale', async () => {
    const code = block('ts', 'new Consumer(pool')
    // as written, but for where 'outbox' is, and a handle on its pool to close it after
    writeFileSync(moduleFile, code.replace(/from 'outbox'/, `from ${JSON.stringify(join(root, 'src/index.js'))}`) + '\nexport {pool as readmePool}\n')
    process.env.DATABASE_URL = url
    const example = (await import(/* @vite-ignore */ moduleFile)) as {onPayment(event: ConsumedEvent): Promise<string>; readmePool: {end(): Promise<void>}}
    try {
      const event = (version: number, amount: number): ConsumedEvent => ({
        id: uuidv7(), eventType: 'payment.received', aggregateType: 'account', aggregateId: 'acc-lib', aggregateVersion: version,
        payload: {account: 'acc-lib', amount}, headers: {}, createdAt: new Date(),
      })
      const [first, second, older] = [event(1, 40), event(3, 2), event(2, 1000)]
      expect(await example.onPayment(first)).toBe('applied')
      expect(await example.onPayment(first)).toBe('duplicate')
      expect(await example.onPayment(second)).toBe('applied')
      expect(await example.onPayment(older)).toBe('stale')
      expect(await balance('acc-lib')).toBe(42)
    } finally {
      await example.readmePool.end()
    }
  })

  it('outbox consume --handler billing.mjs: the handler gets the pg client, and runs as written', async () => {
    const handler = join(tmp, 'billing.mjs')
    writeFileSync(handler, block('js', 'billing.mjs'))
    const run = cliAsync(['consume', '--url', url, '--from', 'http://127.0.0.1:0/events', '--consumer', 'billing', '--handler', handler, '--max-events', '2'])
    let listening = ''
    await until(() => Boolean((listening = /listening url=(\S+)/.exec(run.output().stderr)?.[1] ?? '')), 30_000, 'the receiver to listen')
    const {HttpPublisher} = await import('../../src/publishers/http.js')
    const events = [5, 7].map((amount) => ({
      id: uuidv7(), eventType: 'payment.received', aggregateType: 'account', aggregateId: 'acc-cli', aggregateVersion: null,
      payload: JSON.stringify({account: 'acc-cli', amount}), headers: null, createdAt: new Date(), attempts: 1,
    }))
    expect(await new HttpPublisher({target: listening}).publish(events)).toEqual([{ok: true}, {ok: true}])
    const done = await run.done
    expect(done.status, done.stderr).toBe(0)
    expect(done.stdout).toBe('consumed 2 event(s): 2 applied, 0 duplicate, 0 stale, 0 dead-lettered; 0 handler failure(s) retried\n')
    expect(await balance('acc-cli')).toBe(12)
  })
})
