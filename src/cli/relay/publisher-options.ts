// `outbox relay`'s publisher flags -> the publisher's options, checked by the publisher's own
// rules (src/publishers/options.ts) before anything connects; their errors name the flags.
import {OutboxError, UsageError} from '../../core/errors.js'
import type {PublisherName, PublisherOptionsByName} from '../../publishers/index.js'

/** "Name: value" (repeatable) -> headers; the http publisher checks the names. */
export function parseHeaders(values: string[] | undefined): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const value of values ?? []) {
    const i = value.indexOf(':')
    const name = i > 0 ? value.slice(0, i).trim() : ''
    if (!name) throw new UsageError(`--header ${JSON.stringify(value.split(':')[0])} is not "Name: value"`, 'Use e.g. --header "Authorization: Bearer $TOKEN"')
    headers[name.toLowerCase()] = value.slice(i + 1).trim()
  }
  return headers
}

export interface PublisherFlags {
  publisher: string
  target?: string
  exchange?: string
  'subject-prefix'?: string
  stream?: string
  cloudevents?: string
  source?: string
  /** ms, parsed by the flag */
  'publish-timeout'?: number
  'http-concurrency'?: number
  header?: string[]
}

export interface ChosenPublisher {
  name: PublisherName
  options: PublisherOptionsByName[PublisherName]
  /** where events go, for the start-up line */
  target?: string
}

const EXAMPLE_TARGET: Record<Exclude<PublisherName, 'stdout'>, string> = {
  http: 'https://events.example.com/ingest',
  amqp: 'amqp://user:password@127.0.0.1:5672',
  nats: 'nats://127.0.0.1:4222',
  redis: 'redis://127.0.0.1:6379',
}

/** The publisher options whose flag is not their kebab-case name (README, "Publisher options"). */
const FLAG_OF_OPTION: Record<string, string> = {mode: 'cloudevents', timeoutMs: 'publish-timeout', concurrency: 'http-concurrency', headers: 'header'}

/**
 * The publisher's options from the flags, checked by the publisher's own rules before anything
 * connects: the library's error, its options spelled as these flags.
 */
export async function publisherOptions(flags: PublisherFlags, env = process.env): Promise<ChosenPublisher> {
  const chosen = optionsOf(flags, env)
  const {checkPublisherOptions} = await import('../../publishers/index.js')
  await checkPublisherOptions(chosen.name, chosen.options).catch((error: unknown) => {
    if (!(error instanceof OutboxError)) throw error
    throw new UsageError((o) => error.line((option) => o(FLAG_OF_OPTION[option] ?? option)))
  })
  return chosen
}

function optionsOf(flags: PublisherFlags, env: NodeJS.ProcessEnv): ChosenPublisher {
  const name = flags.publisher as PublisherName
  if (name === 'stdout') return {name, options: {}}
  if (!Object.hasOwn(EXAMPLE_TARGET, name)) throw new UsageError(`unknown publisher ${JSON.stringify(name)}`, 'Use stdout, http, amqp, nats or redis')
  const target = flags.target ?? env.OUTBOX_TARGET
  if (!target) throw new UsageError(`--publisher ${name} needs --target`, `e.g. --target ${EXAMPLE_TARGET[name]} (or set OUTBOX_TARGET)`)
  const timeoutMs = flags['publish-timeout']
  // the same names as the library's options: only those in FLAG_OF_OPTION differ from the flag
  const options = {
    http: () => ({
      target,
      mode: (flags.cloudevents ?? 'structured') as 'structured' | 'binary',
      source: flags.source,
      timeoutMs,
      concurrency: flags['http-concurrency'],
      headers: parseHeaders(flags.header),
    }),
    amqp: () => ({target, exchange: flags.exchange, timeoutMs}),
    nats: () => ({target, subjectPrefix: flags['subject-prefix'], stream: flags.stream, timeoutMs}),
    redis: () => ({target, stream: flags.stream, timeoutMs}),
  }[name]()
  return {name, target, options}
}
