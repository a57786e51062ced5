// The relay worker: the project's Relay (src/relay/relay.ts) with the run's publisher, a short
// lease so lapsed leases are taken over quickly, and per-aggregate ordering.
import type {Db} from '../../db/index.js'
import type {RunTables} from '../tables.js'
import {relayPublisher} from './transport.js'
import type {WorkerConfig} from './worker.js'

export async function runRelay(config: WorkerConfig, db: Db, t: RunTables, say: (line: string) => void): Promise<void> {
  const {Relay} = await import('../../relay/relay.js')
  const publisher = await relayPublisher(config.broker, t.prefix)
  const relay = new Relay({
    db,
    publisher,
    tables: t.outbox,
    batch: config.relay.batch,
    leaseMs: config.relay.leaseMs,
    pollMs: config.relay.pollMs,
    maxAttempts: config.relay.maxAttempts,
    backoff: config.relay.backoff,
    ordering: 'aggregate',
    owner: config.relay.owner,
  })
  process.once('SIGTERM', () => void relay.stop())
  say('ready')
  await relay.start()
  await publisher.close()
}
