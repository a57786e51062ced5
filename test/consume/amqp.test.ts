// AMQP only: a queue declared otherwise is refused before anything is consumed, in one line;
// a connection lost mid-run ends the run with a ConnectionError, and a new run finishes the
// work exactly once (RabbitMQ requeues what the lost connection had not acked); while a handler
// runs, the next message is in hand already, and a stop gives it back.
import {randomBytes} from 'node:crypto'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {consumeAmqp} from '../../src/consume/amqp.js'
import {BrokerLostError, BrokerUnreachableError, ConnectionError} from '../../src/core/errors.js'
import {broker, uniqueName, viaPort} from '../helpers/brokers.js'
import {TcpProxy} from '../helpers/proxy.js'
import {claimed, exactlyOnce, fixture, type Fixture} from './fixture.js'
import {TOPOLOGIES} from './harness.js'
import {eventually} from './helpers.js'

const b = await broker('amqp')

describe.skipIf(!b.available)('amqp runtime: declaration', () => {
  let fx: Fixture
  let connection: import('amqplib').ChannelModel
  const queue = uniqueName('consume_classic')
  beforeAll(async () => {
    fx = await fixture('cad')
    connection = await (await import('amqplib')).default.connect(b.url)
  })
  afterAll(async () => {
    const admin = await connection.createChannel()
    for (const name of [queue, `${queue}.dead-letter`]) await admin.deleteQueue(name).catch(() => {})
    await admin.deleteExchange(`${queue}.dead-letter`).catch(() => {})
    await connection?.close()
    await fx?.close()
  })

  it('refuses a queue declared otherwise, naming it and the way out', async () => {
    const admin = await connection.createChannel()
    await admin.assertQueue(queue, {durable: false})
    await admin.close()
    const run = consumeAmqp({url: b.url, queue}, {db: fx.db, consumer: 'c', tables: {inbox: fx.names.inbox}, handler: async () => {}, signal: AbortSignal.abort()})
    const error = await run.then(() => undefined, (e) => e)
    expect(error.message).toMatch(new RegExp(`refused the declaration of queue ${queue}.*inequivalent arg 'durable'`))
    expect(error.hint).toMatch(/--no-declare/)
  })

  it('a broker it cannot reach: a BrokerUnreachableError (a usage error: exit 2), the kind a supervisor restarts on', async () => {
    const run = consumeAmqp({url: 'amqp://guest:guest@127.0.0.1:1', queue}, {db: fx.db, consumer: 'c', tables: {inbox: fx.names.inbox}, handler: async () => {}, signal: AbortSignal.timeout(10_000)})
    const error = await run.then(() => undefined, (e) => e)
    expect(error).toBeInstanceOf(BrokerUnreachableError)
    expect(error.message).toMatch(/^cannot reach RabbitMQ at /)
  })

  it('the connection lost mid-run: a ConnectionError ends the run; a new run applies the rest, each once', async () => {
    const t = await TOPOLOGIES.amqp(fx.db)
    try {
      const flag = (name: string) => t.cliFlags[t.cliFlags.indexOf(name) + 1]
      const events = claimed(20, randomBytes(2).toString('hex'))
      await t.publish(events)
      const proxy = new TcpProxy(b.host, b.port)
      await proxy.up()
      let handled = 0
      const run = consumeAmqp({url: viaPort(b.url, proxy.port), queue: flag('--queue'), exchange: flag('--exchange')}, {
        db: fx.db,
        consumer: 'lost',
        tables: {inbox: fx.names.inbox},
        concurrency: 2,
        handler: async (event, tx) => {
          if (++handled === 5) await proxy.down() // this one still commits; its ack cannot reach the broker
          await fx.record(event, tx)
        },
      })
      const error = await run.then(() => undefined, (e) => e)
      expect(error).toBeInstanceOf(ConnectionError)
      // the kind a supervisor restarts on (the chaos consumer does), not a text to match
      expect(error).toBeInstanceOf(BrokerLostError)
      expect(error.message).toMatch(/lost the RabbitMQ connection/)
      expect(error.hint).toMatch(/nothing uncommitted was acked/)
      const again = await t.run({consumer: 'lost', tables: {inbox: fx.names.inbox}, handler: fx.record, signal: AbortSignal.timeout(3000)})
      expect(again.deadLettered).toBe(0)
      expect(exactlyOnce(await fx.counts(), events.map((e) => e.id))).toEqual({missing: [], repeated: []})
    } finally {
      await t.cleanup()
    }
  })

  it('while the handler runs the next message is in hand already (prefetch 2 per delivery in a transaction); a stop gives it back', async () => {
    const t = await TOPOLOGIES.amqp(fx.db)
    try {
      const queue = t.cliFlags[t.cliFlags.indexOf('--queue') + 1]
      const events = claimed(6, randomBytes(2).toString('hex'))
      await t.publish(events)
      const admin = await connection.createChannel()
      const stop = new AbortController()
      let ready: number | undefined
      const first = await t.run({
        consumer: 'spare',
        tables: {inbox: fx.names.inbox},
        maxBatch: 1, // one delivery per transaction: prefetch 2 (a batch of 16 would keep 32)
        signal: stop.signal,
        handler: async (event, tx) => {
          await fx.record(event, tx)
          if (ready !== undefined) return
          // one in this handler, one spare: 4 of 6 left ready at the broker (without the spare, 5)
          const count = async () => (await admin.checkQueue(queue)).messageCount
          ready = await eventually(async () => (await count()) === 4 && 4, 'a spare message in hand', 3000).catch(count)
          stop.abort()
        },
      })
      expect(ready).toBe(4)
      expect(first).toMatchObject({applied: 1, stopped: true})
      await eventually(async () => (await admin.checkQueue(queue)).messageCount === 5, 'the spare back in the queue')
      const second = await t.run({consumer: 'spare', tables: {inbox: fx.names.inbox}, handler: fx.record, maxEvents: 5})
      expect(second).toMatchObject({applied: 5, duplicate: 0, deadLettered: 0})
      expect(exactlyOnce(await fx.counts(), events.map((e) => e.id))).toEqual({missing: [], repeated: []})
      await admin.close()
    } finally {
      await t.cleanup()
    }
  })
})
