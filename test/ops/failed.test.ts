// `outbox failed` and `outbox failed show` on all three dialects.
import {afterAll, beforeAll, describe, expect, it, vi} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {listFailed, showEvent} from '../../src/ops/failed.js'
import {databaseNow} from '../../src/ops/query.js'
import {cli} from '../helpers/cli.js'
import {insertRows} from '../helpers/rows.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const matrix = await targets()
const LONG = `Error: connect ECONNREFUSED 10.0.0.1:5672 ${'x'.repeat(200)}\n    at TCPConnectWrap.afterConnect`

for (const target of matrix) {
  describe.skipIf(!target.available)(`failed on ${target.dialect}`, () => {
    let db: Db
    let names: TableNames
    let id: string[]
    const flags = () => ['--url', target.url, '--table', names.outbox, '--archive-table', names.archive]

    beforeAll(async () => {
      ;({db, names} = await openTables(target.url, `fl${target.dialect.slice(0, 2)}`, {inbox: false, archive: true}))
      const now = await databaseNow(db)
      id = await insertRows(db, names, now, [
        {type: 'a', created: -7200, failed: -7000, attempts: 5, lastError: 'old failure'},
        {type: 'b', created: -600, failed: -300, attempts: 5, lastError: LONG, payload: {order: 42, lines: [1, 2]}},
        // as the relay leaves a failed event: lease_until set by its last retry
        {type: 'a', created: -500, failed: -100, attempts: 3, lastError: 'recent', leaseUntil: 200},
        {type: 'a', created: -400, attempts: 2, lastError: 'retrying, not failed', leaseUntil: 30},
        {type: 'a', created: -300, published: -200},
        {type: 'a', created: -250, attempts: 1, leaseOwner: 'relay-9', leaseUntil: -5},
      ])
      await insertRows(db, names, now, [{type: 'z', created: -90_000, published: -89_000, payload: {archived: true}}], 'archive')
    })
    afterAll(() => closeTables(db, names))

    it('lists failed events only, newest failure first, filtered by type and since', async () => {
      const all = await listFailed(db, names, {limit: 50})
      expect(all.total).toBe(3)
      expect(all.events.map((e) => e.id)).toEqual([id[2], id[1], id[0]])
      expect(all.events[1]).toMatchObject({eventType: 'b', attempts: 5, lastError: LONG, aggregateId: 'agg-1'})
      expect((await listFailed(db, names, {limit: 50, types: ['a']})).events.map((e) => e.id)).toEqual([id[2], id[0]])
      const now = await databaseNow(db)
      const recent = await listFailed(db, names, {limit: 50, since: new Date(now.getTime() - 3600_000)})
      expect(recent.total).toBe(2)
      // "ago" on the database clock, whatever the host's says (here: two hours ahead)
      vi.useFakeTimers({toFake: ['Date'], now: Date.now() + 7200_000})
      try {
        expect((await listFailed(db, names, {limit: 50, since: '1h'})).total).toBe(2)
      } finally {
        vi.useRealTimers()
      }
      const limited = await listFailed(db, names, {limit: 1})
      expect(limited).toMatchObject({total: 3, events: [{id: id[2]}]})
    })

    it('the table truncates the error to its first line; --json keeps it whole', () => {
      const text = cli(['failed', ...flags()])
      expect(text.status).toBe(0)
      expect(text.stdout).toContain('Error: connect ECONNREFUSED 10.0.0.1:5672 xxx')
      expect(text.stdout).not.toContain('TCPConnectWrap')
      expect(text.stdout).toContain('3 failed event(s)')
      const json = JSON.parse(cli(['failed', ...flags(), '--json', '--type', 'b']).stdout)
      expect(json.total).toBe(1)
      expect(json.events[0].lastError).toBe(LONG)
      expect(cli(['failed', ...flags(), '--since', 'last week']).status).toBe(2)
    })

    it('failed show ID prints one event in full, from the outbox or the archive', async () => {
      const r = cli(['failed', 'show', id[1], ...flags()])
      expect(r.status).toBe(0)
      expect(r.stdout).toContain('TCPConnectWrap')
      expect(r.stdout).toMatch(/"order": 42/)
      const json = JSON.parse(cli(['failed', 'show', id[1], ...flags(), '--json']).stdout)
      expect(json).toMatchObject({id: id[1], state: 'failed', payload: {order: 42, lines: [1, 2]}, attempts: 5})
      expect((await showEvent(db, names, id[3]))?.state).toBe('retrying')
      expect(cli(['failed', 'show', id[3], ...flags()]).stdout).toMatch(/lease +none \(next attempt not before /)
      // states as status counts them; a failed event is never attempted again, whatever lease_until says
      expect((await showEvent(db, names, id[5]))?.state).toBe('expired-lease')
      expect(cli(['failed', 'show', id[5], ...flags()]).stdout).toMatch(/lease +relay-9 until .* \(expired/)
      expect(cli(['failed', 'show', id[2], ...flags()]).stdout).toMatch(/lease +none\n/)
      expect((await showEvent(db, names, id[4]))?.state).toBe('published')
      const archived = await listArchivedId()
      expect(await showEvent(db, names, archived)).toMatchObject({state: 'archived', payload: {archived: true}})
      const missing = cli(['failed', 'show', '00000000-0000-0000-0000-00000000dead', ...flags()])
      expect(missing.status).toBe(2)
      expect(missing.stderr).toContain('no event')
      expect(cli(['failed', 'show', 'nope', ...flags()]).status).toBe(2)
    })

    async function listArchivedId(): Promise<string> {
      const {ids} = await import('../helpers/rows.js')
      return (await ids(db, names, 'archive'))[0]
    }
  })
}
