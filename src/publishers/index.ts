// createPublisher(name, options): broker clients are imported only for the publisher chosen.
import {UsageError} from '../core/errors.js'
import type {AmqpPublisherOptions} from './amqp.js'
import type {HttpPublisherOptions} from './http.js'
import type {NatsPublisherOptions} from './nats.js'
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

export async function createPublisher<N extends PublisherName>(name: N, options: PublisherOptionsByName[N]): Promise<Publisher> {
  switch (name) {
    case 'stdout':
      return new (await import('./stdout.js')).StdoutPublisher(options as StdoutPublisherOptions)
    case 'http':
      return new (await import('./http.js')).HttpPublisher(options as HttpPublisherOptions)
    case 'amqp':
      return new (await import('./amqp.js')).AmqpPublisher(options as AmqpPublisherOptions)
    case 'nats':
      return new (await import('./nats.js')).NatsPublisher(options as NatsPublisherOptions)
    case 'redis':
      return new (await import('./redis.js')).RedisPublisher(options as RedisPublisherOptions)
    default:
      throw new UsageError(`unknown publisher ${JSON.stringify(name)}`, `Use one of: ${PUBLISHER_NAMES.join(', ')}`)
  }
}
