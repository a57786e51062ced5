// AMQP only: a queue declared otherwise is refused before anything is consumed, in one line.
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {consumeAmqp} from '../../src/consume/amqp.js'
import {broker, uniqueName} from '../helpers/brokers.js'
import {fixture, type Fixture} from './fixture.js'

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
})
