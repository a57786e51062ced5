// PostgreSQL LISTEN/NOTIFY: the producer's NOTIFY wakes an idle relay long before its next
// poll. The poll interval here is 10 minutes, so a delivery at all proves the wake-up.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'
import {writeEvent} from '../../src/producer.js'
import {Relay} from '../../src/relay/relay.js'
import {RecordingPublisher, until} from '../helpers/publishers.js'
import {targets} from '../helpers/targets.js'
import {closeTables, openTables} from '../helpers/tables.js'

const [pg] = await targets(['postgres'])

describe.skipIf(!pg.available)('relay LISTEN/NOTIFY on postgres', () => {
  let db: Db
  let names: TableNames
  beforeAll(async () => {
    ;({db, names} = await openTables(pg.url, 'rlisten', {inbox: false, archive: false}))
  })
  afterAll(() => closeTables(db, names))

  async function produce(n: number): Promise<string> {
    const pgLib = (await import('pg')).default
    const client = new pgLib.Client({connectionString: pg.url})
    await client.connect()
    try {
      await client.query('BEGIN')
      const id = await writeEvent(client, {eventType: 'order.created', aggregateId: `order-${n}`, payload: {n}}, {tables: names})
      await client.query('COMMIT')
      return id
    } finally {
      await client.end()
    }
  }

  it('an idle relay wakes on the NOTIFY sent at commit, and again after the next one', async () => {
    const publisher = new RecordingPublisher()
    const relay = new Relay({db, tables: names, publisher, listen: true, pollMs: 600_000})
    const running = relay.start()
    await until(() => relay.listening, 10_000, 'LISTEN')
    // let the first (empty) claim finish so the loop is asleep
    await new Promise((resolve) => setTimeout(resolve, 200))
    const first = await produce(1)
    await until(() => publisher.sent.length === 1, 20_000, 'the first wake-up')
    const second = await produce(2)
    await until(() => publisher.sent.length === 2, 20_000, 'the second wake-up')
    await relay.stop()
    await running
    expect(publisher.sent.map((e) => e.id)).toEqual([first, second])
    expect(relay.listening).toBe(false)
  })

  it('without listen the same relay would sleep through it (the control)', async () => {
    const publisher = new RecordingPublisher()
    const relay = new Relay({db, tables: names, publisher, listen: false, pollMs: 600_000})
    const running = relay.start()
    await new Promise((resolve) => setTimeout(resolve, 200))
    await produce(3)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    await relay.stop()
    await running
    expect(publisher.sent).toHaveLength(0)
  })
})
