// The chaos consumer: the shipped consumer runtime (src/consume/), the code `outbox consume`
// runs: the broker's delivery source, runOn (the inbox must exist, a Consumer on it) and the
// loop that acks only after Consumer.handle committed, with the business scenario's effect as
// its handler. The harness watches through a thin adapter around the source: each delivery is
// logged when taken and its outcome once the loop settles it; the consumer.after-commit
// failpoint fires there, inside the loop's ack call, after the commit and before the broker
// hears of it. The broken modes (strategies.ts) change what the loop is given (a consumer
// without an inbox, deliveries acked on receipt, a failed one acked), never the loop. A lost
// broker connection ends the runtime's run, as it ends `outbox consume` for its supervisor to
// start it again: here the worker is that supervisor (the hang scenario's silent connections).
import {randomUUID} from 'node:crypto'
import type {Consumer, ConsumeOutcome} from '../../consumer.js'
import {MessageDecodeError} from '../../consume/event.js'
import {DEFAULT_MAX_ATTEMPTS, runLoop, type DeliverySource, type EventHandler, type LoopOptions} from '../../consume/loop.js'
import {pause, runOn} from '../../consume/runtime.js'
import {Consumer as InboxConsumer} from '../../consumer.js'
import {BrokerLostError, BrokerUnreachableError} from '../../core/errors.js'
import {failpoint} from '../../core/failpoints.js'
import type {Db} from '../../db/index.js'
import {createLogger} from '../../relay/logger.js'
import type {Scenario, ScenarioContext} from '../business-scenario.js'
import type {Note} from '../history.js'
import {recordAcked, recordDelivery, recordEffect, recordOutcome, type RunTables} from '../tables.js'
import {openSource} from './transport.js'
import type {WorkerConfig} from './worker.js'

/** ack-first: long enough for the event loop to send the early ack to the broker */
const ACK_FLUSH_MS = 50
/** a supervisor's pause before it starts a consumer whose broker went away again */
const RESTART_MS = 100

/** The runtime lost its broker connection, or could not open one (by the error's kind, not its text): what a supervisor restarts it after. */
const brokerGone = (error: unknown) => error instanceof BrokerLostError || error instanceof BrokerUnreachableError

/** What the delivery log says of a delivery: the loop's outcome, or what else became of it. */
type Settled = ConsumeOutcome | 'dead-lettered' | 'acked'

export async function runConsumer(config: WorkerConfig, db: Db, scenario: Scenario, ctx: ScenarioContext, t: RunTables, say: (line: string) => void, note: Note, stop: AbortSignal): Promise<void> {
  // on stop, mid-message, the message is finished and acked first (the loop's graceful stop)
  const log = (deliveryId: string, outcome: Settled) => recordOutcome(db, db.dialect, t, deliveryId, outcome)
  const acked = (deliveryId: string) => recordAcked(db, db.dialect, t, deliveryId)

  const handler: EventHandler = async (event, tx) => {
    await scenario.effect(tx, event, ctx)
    await recordEffect(tx, db.dialect, t, {eventId: event.id, aggregateId: event.aggregateId, version: event.aggregateVersion})
  }

  /** The runtime's source, each delivery logged when taken and when settled. */
  const open = async (): Promise<DeliverySource> => {
    const source = await openSource(config.broker, config.consumerName, t.prefix, DEFAULT_MAX_ATTEMPTS, config.consumerPoll)
    say('ready')
    return {
      async next() {
        const delivery = await source.next()
        if (!delivery) return null
        const {event} = delivery
        const deliveryId = randomUUID()
        const known = !(event instanceof MessageDecodeError)
        const ids = known ? [event.id] : undefined
        note({type: 'invoke', op: 'deliver', ids})
        await recordDelivery(db, db.dialect, t, known ? {deliveryId, eventId: event.id, aggregateId: event.aggregateId, version: event.aggregateVersion} : {deliveryId, eventId: '(undecodable)', aggregateId: null, version: null})
        const ackedEarly = known && config.consumerMode === 'ack-first'
        if (ackedEarly) {
          // Broken on purpose: acked on receipt, so the broker forgets the message before the
          // inbox transaction has even begun (an auto-ack consumer)
          await delivery.ack('applied')
          // clients send acks from a later turn of the event loop (amqplib, nats.js), and the
          // database calls may never yield one (better-sqlite3): let it leave before a kill can come
          await new Promise((resolve) => setTimeout(resolve, ACK_FLUSH_MS))
          await log(deliveryId, 'acked')
          await acked(deliveryId)
        }
        return {
          ...delivery,
          async ack(outcome) {
            note({type: 'ok', op: 'deliver', ids, detail: outcome})
            await log(deliveryId, outcome)
            failpoint('consumer.after-commit')
            if (!ackedEarly) await delivery.ack(outcome)
            await acked(deliveryId)
          },
          async retry(reason, delayMs) {
            note({type: 'fail', op: 'deliver', ids, detail: `retry: ${reason}`})
            if (config.consumerMode !== 'ack-on-error') return delivery.retry(reason, delayMs)
            // Broken on purpose: the transaction failed (a lost connection), the message is acked anyway
            await log(deliveryId, 'acked')
            await delivery.ack('applied')
            await acked(deliveryId)
          },
          async deadLetter(reason) {
            note({type: 'fail', op: 'deliver', ids, detail: `dead-lettered: ${reason}`})
            await log(deliveryId, 'dead-lettered')
            await delivery.deadLetter(reason)
            await acked(deliveryId)
          },
        }
      },
      stop: () => source.stop(),
      close: () => source.close(),
    }
  }

  const options: Omit<LoopOptions, 'consumer'> = {handler, signal: stop, logger: createLogger({quiet: true, secrets: [config.url, config.broker.url]})}
  const consume = async () => {
    if (config.consumerMode === 'naive') {
      // the outage check is the shipped Consumer's (it only pings the database)
      const ping = new InboxConsumer(db, {consumer: config.consumerName, tables: t.outbox})
      await runLoop(await open(), {...options, consumer: naiveConsumer(db), databaseReachable: () => ping.reachable()})
    } else {
      await runOn(open, {...options, db, consumer: config.consumerName, tables: t.outbox, checkVersion: true})
    }
  }
  for (;;) {
    try {
      return await consume()
    } catch (error) {
      if (stop.aborted || !brokerGone(error)) throw error
      await pause(RESTART_MS, stop)
      if (stop.aborted) return
    }
  }
}

/** Broken on purpose: no inbox, so every delivery applies the effect (a redelivery applies it again). */
function naiveConsumer(db: Db): Consumer {
  const naive: Pick<Consumer, 'handle'> = {
    handle: (_event, effect) =>
      db.transaction(async (tx) => {
        await effect(tx)
        failpoint('consumer.before-commit')
        return 'applied' as const
      }),
  }
  return naive as Consumer
}
