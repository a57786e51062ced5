// `outbox relay`'s publisher flags -> the publisher's options: the checks that need several
// flags at once (a target for the publisher, its scheme), each a one-line usage error.
import {UsageError} from '../../core/errors.js'
import type {PublisherName, PublisherOptionsByName} from '../../publishers/index.js'

/** "Name: value" (repeatable) -> headers. */
export function parseHeaders(values: string[] | undefined): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const value of values ?? []) {
    const i = value.indexOf(':')
    const name = i > 0 ? value.slice(0, i).trim() : ''
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new UsageError(`--header ${JSON.stringify(value.split(':')[0])} is not "Name: value"`, 'Use e.g. --header "Authorization: Bearer $TOKEN"')
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

const TARGET_SCHEMES: Record<Exclude<PublisherName, 'stdout'>, {pattern: RegExp; text: string}> = {
  http: {pattern: /^https?:\/\//i, text: 'http:// or https://'},
  amqp: {pattern: /^amqps?:\/\//i, text: 'amqp:// or amqps://'},
  nats: {pattern: /^(nats|tls):\/\//i, text: 'nats:// or tls://'},
  redis: {pattern: /^rediss?:\/\//i, text: 'redis:// or rediss://'},
}

const EXAMPLE_TARGET: Record<Exclude<PublisherName, 'stdout'>, string> = {
  http: 'https://events.example.com/ingest',
  amqp: 'amqp://user:password@127.0.0.1:5672',
  nats: 'nats://127.0.0.1:4222',
  redis: 'redis://127.0.0.1:6379',
}

/** The publisher's options from the flags, validated before anything connects. */
export function publisherOptions(flags: PublisherFlags, env = process.env): {name: PublisherName; options: PublisherOptionsByName[PublisherName]; target?: string} {
  const name = flags.publisher as PublisherName
  const timeoutMs = flags['publish-timeout']
  if (name === 'stdout') return {name, options: {}}
  const target = flags.target ?? env.OUTBOX_TARGET
  if (!target) throw new UsageError(`--publisher ${name} needs --target`, `e.g. --target ${EXAMPLE_TARGET[name]} (or set OUTBOX_TARGET)`)
  if (!TARGET_SCHEMES[name].pattern.test(target)) {
    throw new UsageError(`--target for --publisher ${name} must be a ${TARGET_SCHEMES[name].text} URL`, `e.g. --target ${EXAMPLE_TARGET[name]}`)
  }
  try {
    new URL(target.split(',')[0])
  } catch {
    throw new UsageError('--target is not a valid URL', `e.g. --target ${EXAMPLE_TARGET[name]}`)
  }
  switch (name) {
    case 'http':
      return {
        name,
        target,
        options: {
          target,
          mode: (flags.cloudevents ?? 'structured') as 'structured' | 'binary',
          source: flags.source,
          timeoutMs,
          concurrency: flags['http-concurrency'],
          headers: parseHeaders(flags.header),
        },
      }
    case 'amqp':
      return {name, target, options: {url: target, exchange: flags.exchange, timeoutMs}}
    case 'nats':
      const prefix = flags['subject-prefix']
      // the stream takes PREFIX> and each event goes to PREFIX<event_type>: without the dot the
      // two never meet ("rvl>" is no wildcard over "rvlorder.created"), and every event retried
      if (prefix !== undefined && prefix !== '' && !prefix.endsWith('.')) {
        throw new UsageError(`--subject-prefix ${JSON.stringify(prefix)} must end with a dot`, `Use e.g. --subject-prefix ${prefix}.`)
      }
      return {name, target, options: {url: target, subjectPrefix: prefix, stream: flags.stream, timeoutMs}}
    case 'redis':
      return {name, target, options: {url: target, stream: flags.stream, timeoutMs}}
  }
  throw new UsageError(`unknown publisher ${JSON.stringify(name)}`, 'Use stdout, http, amqp, nats or redis')
}
