// One JSON line per event on a stream (stdout by default): pipe it anywhere.
import type {Writable} from 'node:stream'
import type {ClaimedEvent} from '../schema/event-row.js'
import {envelopeJson} from './envelope.js'
import {checkOptions, writable, type OptionRules} from './options.js'
import type {Publisher, PublishResult} from './types.js'

export interface StdoutPublisherOptions {
  /** default process.stdout */
  stream?: Writable
}

export const optionRules: OptionRules<StdoutPublisherOptions> = {stream: writable()}

export class StdoutPublisher implements Publisher {
  readonly name = 'stdout'
  private readonly stream: Writable

  constructor(options: StdoutPublisherOptions = {}) {
    this.stream = checkOptions('stdout', options, optionRules).stream ?? process.stdout
  }

  async publish(events: readonly ClaimedEvent[]): Promise<PublishResult[]> {
    const text = events.map((e) => envelopeJson(e) + '\n').join('')
    // "ok" means the stream accepted the bytes (flushed to the OS when it asks us to wait).
    await new Promise<void>((resolve, reject) => {
      const flushed = this.stream.write(text, (error) => (error ? reject(error) : resolve()))
      if (!flushed) this.stream.once('error', reject)
    })
    return events.map(() => ({ok: true}))
  }

  async close(): Promise<void> {}
}
