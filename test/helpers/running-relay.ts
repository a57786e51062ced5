// A relay started in the background for the claim-mark tests, with every distinct mark its
// claims started from (sampled every 5 ms), and what it sent.
import type {Db} from '../../src/db/index.js'
import type {TableNames} from '../../dialects/index.js'
import {Relay, type RelayOptions} from '../../src/relay/relay.js'
import {RecordingPublisher} from './publishers.js'

export function runningRelay(db: Db, names: TableNames, options: Partial<RelayOptions>) {
  const publisher = new RecordingPublisher()
  const relay = new Relay({db, tables: names, publisher, pollMs: 40, ...options})
  const marks: string[] = []
  const sampler = setInterval(() => {
    const mark = relay.claimMarkValue!
    if (marks.at(-1) !== mark) marks.push(mark)
  }, 5)
  const loop = relay.start()
  const stop = async () => (clearInterval(sampler), await relay.stop(), await loop)
  const sends = (id: string) => publisher.sent.filter((e) => e.id === id).length
  return {relay, publisher, marks, stop, sends, published: (id: string) => sends(id) > 0}
}
