// createPublisher(name, options): broker clients are imported only for the publisher chosen.
// Each publisher checks its options when created (options.ts); checkPublisherOptions runs the
// same check without creating one, for the CLI to refuse bad flags before it connects.
import {loadAmqplib, loadNats, loadRedis} from '../core/broker-clients.js'
import {UsageError} from '../core/errors.js'
import type {AmqpPublisherOptions} from './amqp.js'
import type {HttpPublisherOptions} from './http.js'
import type {NatsPublisherOptions} from './nats.js'
import {checkOptions, type OptionRules} from './options.js'
import type {RedisPublisherOptions} from './redis.js'
import type {StdoutPublisherOptions} from './stdout.js'
import type {Publisher} from './types.js'

export interface PublisherOptionsByName {
  stdout: StdoutPublisherOptions
  http: HttpPublisherOptions
  amqp: AmqpPublisherOptions
  nats: NatsPublisherOptions
  redis: RedisPublisherOptions
}

export type PublisherName = keyof PublisherOptionsByName

export const PUBLISHER_NAMES: PublisherName[] = ['stdout', 'http', 'amqp', 'nats', 'redis']

/** A publisher's module, loaded on first use: its option rules and its constructor. */
interface PublisherModule<O> {
  optionRules: OptionRules<never>
  create(options: O): Publisher
}

const MODULES: {[N in PublisherName]: () => Promise<PublisherModule<PublisherOptionsByName[N]>>} = {
  stdout: async () => import('./stdout.js').then((m) => ({optionRules: m.optionRules, create: (o) => new m.StdoutPublisher(o)})),
  http: async () => import('./http.js').then((m) => ({optionRules: m.optionRules, create: (o) => new m.HttpPublisher(o)})),
  // the broker's client is loaded now, not at the first publish: a missing package is the
  // app's to install (one line, exit 2), not an outage to retry for ever
  amqp: async () => loadAmqplib().then(() => import('./amqp.js')).then((m) => ({optionRules: m.optionRules, create: (o) => new m.AmqpPublisher(o)})),
  nats: async () => loadNats().then(() => import('./nats.js')).then((m) => ({optionRules: m.optionRules, create: (o) => new m.NatsPublisher(o)})),
  redis: async () => loadRedis().then(() => import('./redis.js')).then((m) => ({optionRules: m.optionRules, create: (o) => new m.RedisPublisher(o)})),
}

/** The publisher `name` with its options, checked (a UsageError naming the option at fault); nothing connects yet. */
export async function createPublisher<N extends PublisherName>(name: N, options: PublisherOptionsByName[N]): Promise<Publisher> {
  return (await load(name)).create(options)
}

/** What createPublisher(name, options) would refuse, refused without creating the publisher. */
export async function checkPublisherOptions(name: PublisherName, options: unknown): Promise<void> {
  checkOptions(name, options, (await load(name)).optionRules)
}

function load<N extends PublisherName>(name: N): Promise<PublisherModule<PublisherOptionsByName[N]>> {
  // from plain JavaScript `name` can be anything; hasOwn: not "toString" either
  if (!Object.hasOwn(MODULES, name)) throw new UsageError(`unknown publisher ${JSON.stringify(name)}`, `Use one of: ${PUBLISHER_NAMES.join(', ')}`)
  return MODULES[name]()
}
