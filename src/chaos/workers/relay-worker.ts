// The relay worker: the project's Relay (src/relay/relay.ts) with the run's publisher, a short
// lease so lapsed leases are taken over quickly, and per-aggregate ordering.
import type {Db} from '../../db/index.js'
import type {Publisher} from '../../publishers/types.js'
import type {Note} from '../history.js'
import type {RunTables} from '../tables.js'
import {relayPublisher} from './transport.js'
import type {WorkerConfig} from './worker.js'

export async function runRelay(config: WorkerConfig, db: Db, t: RunTables, say: (line: string) => void, note: Note): Promise<void> {
  const {Relay} = await import('../../relay/relay.js')
  const publisher = noted(await relayPublisher(config.broker, t.prefix), note)
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

/** The publisher with each batch in the history: what was claimed and sent, and what the broker said. */
function noted(publisher: Publisher, note: Note): Publisher {
  return {
    name: publisher.name,
    async publish(events) {
      const ids = events.map((e) => e.id)
      note({type: 'invoke', op: 'publish', ids})
      try {
        const results = await publisher.publish(events)
        const failed = results.filter((r) => !r.ok).length
        note({type: failed ? 'fail' : 'ok', op: 'publish', ids, detail: failed ? `${failed} of ${ids.length} not taken` : undefined})
        return results
      } catch (error) {
        note({type: 'fail', op: 'publish', ids, detail: String((error as Error)?.message ?? error)})
        throw error
      }
    },
    close: () => publisher.close(),
  }
}
