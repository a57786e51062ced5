// Every command's --json output, the real one, validated against the schema the package ships
// for it (schemas/output/, made from the command's return type at build): success and failure.
import {randomUUID} from 'node:crypto'
import {createServer, type Server} from 'node:http'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import Ajv from 'ajv'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {cli, cliAsync} from '../helpers/cli.js'
import {until} from '../helpers/publishers.js'

const root = new URL('../..', import.meta.url).pathname
const ajv = new Ajv({strict: true, allowUnionTypes: true, validateFormats: false})
const validators = new Map<string, ReturnType<typeof ajv.compile>>()

/** The command's stdout parsed, and valid against schemas/output/<schema>.schema.json. */
function valid(schema: string, r: {stdout: string; stderr: string; status: number | null}, status = 0): any {
  expect(r.status, `exit ${r.status}: ${r.stderr}${r.stdout.slice(0, 400)}`).toBe(status)
  const output = JSON.parse(r.stdout)
  if (!validators.has(schema)) validators.set(schema, ajv.compile(JSON.parse(readFileSync(join(root, `schemas/output/${schema}.schema.json`), 'utf8'))))
  const validate = validators.get(schema)!
  expect(validate(output), `${schema}: ${JSON.stringify(validate.errors)}\n${r.stdout.slice(0, 600)}`).toBe(true)
  return output
}

let dir: string
let url: string
let receiver: Server
let receiverUrl: string
const env = {OUTBOX_DATABASE_URL: '', DATABASE_URL: '', OUTBOX_CONFIG: ''}
const run = (args: string[]) => cli(args, {env, cwd: dir})

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'outbox-json-'))
  url = `sqlite:${join(dir, 'app.db')}`
  receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end()))
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as {port: number}).port}/ingest`
  valid('init', run(['init', '--apply', '--url', url, '--json']))
})
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve))
  rmSync(dir, {recursive: true, force: true})
})

/** Writes n events through the library into the outbox; returns their ids. */
async function write(n: number): Promise<string[]> {
  const {default: Database} = await import('better-sqlite3')
  const {writeEventSync} = await import('../../src/producer.js')
  const database = new Database(url.slice('sqlite:'.length))
  const ids = database.transaction(() => Array.from({length: n}, (_, i) => writeEventSync(database, {eventType: 'order.paid', aggregateId: `o-${i}`, payload: {i}})))()
  database.close()
  return ids
}

describe('each command --json, against its schema', () => {
  it('init (printed), sql claim and its siblings, version, config', () => {
    valid('init', run(['init', '--dialect', 'postgres', '--json']))
    for (const sql of [['claim'], ['mark-published'], ['retry', '--owner', 'x'], ['release', '--owner', 'x']]) valid('sql', run(['sql', ...sql, '--dialect', 'mysql', '--json']))
    valid('version', run(['version', '--json']))
    valid('config', run(['config', 'relay', '--json']))
  })

  it('relay --once: delivered (0), and a receiver that is down (1)', async () => {
    await write(3)
    // async: the receiver lives in this process, which spawnSync would block
    const ok = valid('relay', await cliAsync(['relay', '--url', url, '--publisher', 'http', '--target', receiverUrl, '--once', '--json', '--quiet'], env).done)
    expect(ok).toMatchObject({published: 3, exitCode: 0, backlog: {pending: 0, oldestPendingAgeSeconds: null}})
    await write(1)
    const down = valid('relay', run(['relay', '--url', url, '--publisher', 'http', '--target', 'http://127.0.0.1:1/none', '--once', '--json', '--quiet']), 1)
    expect(down).toMatchObject({exitCode: 1, undelivered: 1})
  })

  it('status, failed, failed show', async () => {
    valid('status', run(['status', '--url', url, '--json']))
    const [id] = await write(1)
    const {default: Database} = await import('better-sqlite3')
    const database = new Database(url.slice('sqlite:'.length))
    database.prepare("UPDATE outbox_events SET failed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), attempts = 10, last_error = 'boom' WHERE id = ?").run(id)
    database.close()
    expect(valid('failed', run(['failed', '--url', url, '--json'])).events?.length ?? 1).toBeGreaterThan(0)
    valid('failed-show', run(['failed', 'show', id, '--url', url, '--json']))
    valid('status', run(['status', '--url', url, '--max-failed', '0', '--json']), 1)
  })

  it('replay and archive: a dry run and the real thing', () => {
    valid('replay', run(['replay', '--url', url, '--since', '1h', '--dry-run', '--json']))
    valid('replay', run(['replay', '--url', url, '--failed', '--yes', '--json']))
    valid('archive', run(['archive', '--url', url, '--before', '0s', '--dry-run', '--json']))
    valid('archive', run(['archive', '--url', url, '--before', '0s', '--yes', '--json']))
  })

  it('verify', () => {
    const r = run(['verify', '--url', url, '--json'])
    valid('verify', r, r.status ?? 0)
  })

  it('consume --max-events over http', async () => {
    const handler = join(dir, 'handler.mjs')
    writeFileSync(handler, 'export default async () => {}\n')
    const consumer = cliAsync(['consume', '--url', url, '--from', 'http://127.0.0.1:0/events', '--consumer', 'json-test', '--handler', handler, '--max-events', '1', '--json'], env)
    let target = ''
    await until(() => Boolean((target = /listening url=(\S+)/.exec(consumer.output().stderr)?.[1] ?? '')), 30_000, 'the receiver to listen')
    const {HttpPublisher} = await import('../../src/publishers/http.js')
    const event = {id: randomUUID(), eventType: 'order.paid', aggregateType: null, aggregateId: 'o-1', aggregateVersion: null, payload: '{}', headers: null, createdAt: new Date(), attempts: 1}
    expect(await new HttpPublisher({target}).publish([event])).toEqual([{ok: true}])
    const done = await consumer.done
    expect(valid('consume', done)).toMatchObject({applied: 1, settled: 1})
  })

  it('chaos (one step)', () => {
    valid('chaos', cli(['chaos', '--steps', 'relay.after-send', '--scenarios', 'none', '--json'], {env}))
  }, 180_000)

  it('an error is {error: {message, exitCode}}', () => {
    const r = run(['status', '--url', 'oracle://h/db', '--json'])
    expect(valid('error', r, 2).error.exitCode).toBe(2)
  })
})
