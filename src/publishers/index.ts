// createPublisher(name, options): broker clients are imported only for the publisher chosen.
import {UsageError} from '../errors.js'
import type {HttpPublisherOptions} from './http.js'
import type {StdoutPublisherOptions} from './stdout.js'
import type {Publisher} from './types.js'

export interface PublisherOptionsByName {
  stdout: StdoutPublisherOptions
  http: HttpPublisherOptions
}

export type PublisherName = keyof PublisherOptionsByName

export const PUBLISHER_NAMES: PublisherName[] = ['stdout', 'http']

export async function createPublisher<N extends PublisherName>(name: N, options: PublisherOptionsByName[N]): Promise<Publisher> {
  switch (name) {
    case 'stdout':
      return new (await import('./stdout.js')).StdoutPublisher(options as StdoutPublisherOptions)
    case 'http':
      return new (await import('./http.js')).HttpPublisher(options as HttpPublisherOptions)
    default:
      throw new UsageError(`unknown publisher ${JSON.stringify(name)}`, `Use one of: ${PUBLISHER_NAMES.join(', ')}`)
  }
}
