// The relay worker: the project's Relay (src/relay/relay.ts) with the run's publisher, a short
// lease so lapsed leases are taken over quickly, and per-aggregate ordering. Under the broken
// strategy outbox-lost-is-published its publisher says ok where the broker never answered.
import type {Db} from '../../db/index.js'
import type {Publisher, PublishResult} from '../../publishers/types.js'
import type {Note} from '../history.js'
import type {RunTables} from '../tables.js'
import {relayPublisher} from './transport.js'
import type {WorkerConfig} from './worker.js'

export async function runRelay(config: WorkerConfig, db: Db, t: RunTables, say: (line: string) => void, note: Note, stop: AbortSignal): Promise<void> {
  const {Relay} = await import('../../relay/relay.js')
  const shipped = await relayPublisher(config.broker, t.prefix, config.relay.publishTimeoutMs)
  const publisher = noted(config.strategy === 'outbox-lost-is-published' ? lostIsPublished(shipped) : shipped, note)
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
    // where the dialect has it (PostgreSQL); row leases elsewhere
    leaseBy: config.relay.leaseBy && db.dialect.relay.transactionLease ? 'transaction' : 'row',
  })
  stop.addEventListener('abort', () => void relay.stop(), {once: true})
  say('ready')
  if (!stop.aborted) await relay.start()
  await publisher.close()
}

/** Broken on purpose: a publish that failed without an answer from the broker (lost, refused, timed out) counts as published. */
function lostIsPublished(publisher: Publisher): Publisher {
  return {
    name: publisher.name,
    async publish(events) {
      const results: PublishResult[] = await publisher.publish(events).catch(() => events.map(() => ({ok: true})))
      // a broker's refusal (5xx, permanent) is an answer; anything else is taken as a success
      return results.map((r) => (r.ok || r.permanent || /^HTTP \d/.test(r.error) ? r : {ok: true}))
    },
    close: () => publisher.close(),
  }
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
