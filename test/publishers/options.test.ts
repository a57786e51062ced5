// Every publisher refuses, when it is created, an unknown option, a missing one and one of the
// wrong kind: one UsageError naming it, from plain JavaScript too (no TypeScript to catch it).
// No broker is needed: nothing connects before the first publish.
import {spawnSync} from 'node:child_process'
import {describe, expect, it} from 'vitest'
import {publisherOptions} from '../../src/cli/relay/publisher-options.js'
import {UsageError} from '../../src/core/errors.js'
import {asFlag} from '../../src/cli/option-flags.js'
import {AmqpPublisher} from '../../src/publishers/amqp.js'
import {HttpPublisher} from '../../src/publishers/http.js'
import {checkPublisherOptions, createPublisher, PUBLISHER_NAMES, type PublisherName} from '../../src/publishers/index.js'
import {NatsPublisher} from '../../src/publishers/nats.js'
import {RedisPublisher} from '../../src/publishers/redis.js'
import {StdoutPublisher} from '../../src/publishers/stdout.js'

/** Per publisher: options it takes, a typo of one, and a value of the wrong kind. */
const CASES: Record<PublisherName, {good: object; typo: [string, string]; wrong: [string, unknown, RegExp]; missing?: string; construct: (o: never) => unknown}> = {
  stdout: {good: {}, typo: ['strem', 'stream'], wrong: ['stream', 'stdout', /stream must be a writable stream \(process\.stdout, a file stream, \.\.\.\), got "stdout"/], construct: (o) => new StdoutPublisher(o)},
  http: {good: {target: 'https://h.example/e'}, typo: ['concurency', 'concurrency'], wrong: ['concurrency', '4', /concurrency must be a whole number from 1 to 10000, got "4"/], missing: 'target', construct: (o) => new HttpPublisher(o)},
  amqp: {good: {target: 'amqp://u:p@h.example:5672'}, typo: ['exchnage', 'exchange'], wrong: ['timeoutMs', '5s', /timeoutMs must be from 1 to 2147483647 milliseconds.*, got "5s"/], missing: 'target', construct: (o) => new AmqpPublisher(o)},
  nats: {good: {target: 'nats://h.example:4222'}, typo: ['subjectPrefx', 'subjectPrefix'], wrong: ['stream', 42, /stream must be a non-empty string, got 42/], missing: 'target', construct: (o) => new NatsPublisher(o)},
  redis: {good: {target: 'redis://h.example:6379'}, typo: ['maxlength', 'maxLen'], wrong: ['maxLen', -1, /maxLen must be a whole number from 1 up, got -1/], missing: 'target', construct: (o) => new RedisPublisher(o)},
}

/** The UsageError a call throws (fails the test when it throws none or another kind). */
async function refusal(call: () => unknown): Promise<UsageError> {
  try {
    await call()
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError)
    return error as UsageError
  }
  throw new Error('expected a UsageError, got none')
}

describe('publisher options: refused at creation, naming the option', () => {
  for (const name of PUBLISHER_NAMES) {
    const c = CASES[name]
    describe(name, () => {
      it('takes its options', async () => {
        expect((await createPublisher(name, c.good as never)).name).toBe(name)
        await checkPublisherOptions(name, c.good)
      })

      it('an unknown option (a typo): named, with the nearest known one and the list', async () => {
        for (const create of [() => createPublisher(name, {...c.good, [c.typo[0]]: 'x'} as never), () => c.construct({...c.good, [c.typo[0]]: 'x'} as never)]) {
          const e = await refusal(create)
          expect(e.line()).toMatch(new RegExp(`^${name} publisher: unknown option ${c.typo[0]}\\. Did you mean ${c.typo[1]}\\? Known: `))
          expect(e.line()).not.toContain('\n')
          expect(e.option).toBe(c.typo[0])
        }
      })

      it('a value of the wrong kind: named, with what it must be', async () => {
        const e = await refusal(() => createPublisher(name, {...c.good, [c.wrong[0]]: c.wrong[1]} as never))
        expect(e.line()).toMatch(c.wrong[2])
        expect(e.option).toBe(c.wrong[0])
        expect(await refusal(() => c.construct({...c.good, [c.wrong[0]]: c.wrong[1]} as never))).toMatchObject({message: e.message})
      })

      if (c.missing) {
        it('a missing target: named, with an example', async () => {
          for (const options of [{}, undefined, {target: undefined}]) {
            const e = await refusal(() => createPublisher(name, options as never))
            expect(e.line()).toMatch(new RegExp(`^${name} publisher needs target\\. e\\.g\\. ${name === 'http' ? 'https' : name}://`))
          }
          expect((await refusal(() => c.construct({} as never))).option).toBe('target')
        })
      }
    })
  }

  it('a target of another scheme or no URL is refused, never echoed (it may hold a password)', async () => {
    for (const [name, target] of [['amqp', 'redis://u:s3cret@h'], ['redis', 'amqp://u:s3cret@h'], ['nats', 'redis://u:s3cret@h'], ['http', 'ftp://u:s3cret@h/x'], ['http', 'https://u:s3cret@[h']] as const) {
      const e = await refusal(() => createPublisher(name, {target}))
      expect(e.line()).toMatch(new RegExp(`^${name} publisher: target (must be (a URL|URLs): ${name === 'http' ? 'http' : name}://|is not a valid URL)`))
      expect(e.line()).not.toContain('s3cret')
    }
    // a NATS cluster: several URLs; the client also takes a bare host:port
    await checkPublisherOptions('nats', {target: 'nats://a:4222, tls://b:4222,c:4222'})
    expect((await refusal(() => checkPublisherOptions('nats', {target: 'nats://a:4222,redis://b'}))).line()).toMatch(/comma-separated for a cluster/)
  })

  it('url: the deprecated name of target on amqp, nats and redis; both at once refused', async () => {
    for (const [name, url] of [['amqp', 'amqp://h:5672'], ['nats', 'nats://h:4222'], ['redis', 'redis://h:6379']] as const) {
      await checkPublisherOptions(name, {url})
      expect((await refusal(() => createPublisher(name, {url, target: url} as never))).line()).toBe(`${name} publisher: url and target both given. Give target only: url is its deprecated name`)
      expect((await refusal(() => createPublisher(name, {url: 'ftp://h'}))).line()).toMatch(/^\w+ publisher: url must be (a URL|URLs): /)
    }
    expect((await refusal(() => createPublisher('http', {url: 'http://h/e'} as never))).option).toBe('url')
  })

  it('options that are no object, and a publisher that does not exist', async () => {
    const e = await refusal(() => createPublisher('amqp', 'amqp://guest:s3cret@h' as never))
    expect(e.line()).toBe('amqp publisher options must be an object, got a string. e.g. {target: "amqp://user:password@127.0.0.1:5672"}')
    expect((await refusal(() => createPublisher('kafka' as never, {} as never))).line()).toMatch(/^unknown publisher "kafka"\. Use one of: stdout, http/)
    expect((await refusal(() => createPublisher('toString' as never, {} as never))).line()).toMatch(/^unknown publisher "toString"/)
  })

  it('the rest of the rules: timers Node can wait, header names and one-line values, NATS names', async () => {
    const refused = async (name: PublisherName, options: object) => (await refusal(() => checkPublisherOptions(name, options))).line()
    expect(await refused('amqp', {target: 'amqp://h', timeoutMs: 30 * 86_400_000})).toMatch(/timeoutMs must be from 1 to 2147483647 milliseconds/)
    expect(await refused('http', {target: 'http://h', headers: {'bad name': 'x'}})).toBe('http publisher: headers has "bad name", which is no header name')
    expect(await refused('http', {target: 'http://h', headers: {authorization: 'Bearer s3cret\r\nX: y'}})).toBe('http publisher: headers has a value for "authorization" that is not a one-line string')
    expect(await refused('http', {target: 'http://h', mode: 'Binary'})).toBe('http publisher: mode must be "structured" or "binary", got "Binary"')
    expect(await refused('nats', {target: 'nats://h', subjectPrefix: 'orders'})).toMatch(/subjectPrefix must end with a dot/)
    expect(await refused('nats', {target: 'nats://h', stream: 'orders.v1'})).toMatch(/stream must be a JetStream stream name/)
    expect(await refused('amqp', {target: 'amqp://h', exchangeType: 'fan-out'})).toMatch(/exchangeType must be "topic" or "direct" or "fanout" or "headers"/)
    expect(await refused('amqp', {target: 'amqp://h', routingKey: 'order'})).toMatch(/routingKey must be a function, got "order"/)
    await checkPublisherOptions('nats', {target: 'nats://h', subjectPrefix: '', stream: 'ORDERS', timeoutMs: undefined})
    await checkPublisherOptions('amqp', {target: 'amqps://h', exchange: 'x', exchangeType: 'fanout', assertExchange: false, mandatory: false, routingKey: () => 'k', timeoutMs: 1500})
  })
})

describe('outbox relay: the same rules, spelled as its flags', () => {
  const line = async (flags: Parameters<typeof publisherOptions>[0]) => (await refusal(() => publisherOptions(flags, {}))).line(asFlag)
  it('names --publish-timeout, --http-concurrency, --header, --subject-prefix, --target', async () => {
    expect(await line({publisher: 'amqp', target: 'amqp://h', 'publish-timeout': 30 * 86_400_000})).toMatch(/^amqp publisher: --publish-timeout must be from 1 to/)
    expect(await line({publisher: 'http', target: 'http://h', 'http-concurrency': 20_000})).toMatch(/^http publisher: --http-concurrency must be a whole number from 1 to 10000/)
    expect(await line({publisher: 'http', target: 'http://h', header: ['bad name: v']})).toBe('http publisher: --header has "bad name", which is no header name')
    expect(await line({publisher: 'nats', target: 'nats://h', 'subject-prefix': 'orders'})).toMatch(/^nats publisher: --subject-prefix must end with a dot/)
    expect(await line({publisher: 'redis', target: 'nats://h'})).toBe('redis publisher: --target must be a URL: redis:// or rediss://')
    expect(await line({publisher: 'redis'})).toBe('--publisher redis needs --target. e.g. --target redis://127.0.0.1:6379 (or set OUTBOX_TARGET)')
  })
  it('passes target (not url) to every publisher', async () => {
    for (const [publisher, target] of [['amqp', 'amqp://h'], ['nats', 'nats://h'], ['redis', 'redis://h'], ['http', 'http://h/e']] as const) {
      const chosen = await publisherOptions({publisher, target}, {})
      expect(chosen.options).toMatchObject({target})
      expect(chosen.options).not.toHaveProperty('url')
    }
  })
})

it('plain JavaScript against the built package: the same refusals, as UsageErrors', () => {
  const script = `
    import {createPublisher, UsageError} from './dist/src/index.js'
    const lines = []
    for (const [name, options] of [['amqp', {target: 'amqp://h', exchnage: 'orders'}], ['nats', {}], ['redis', {target: 'redis://h', maxLen: '10'}], ['http', {target: 'http://h', headers: []}], ['stdout', {stream: 1}]]) {
      try { await createPublisher(name, options); lines.push('created ' + name) } catch (e) { lines.push((e instanceof UsageError ? '' : 'NOT A UsageError: ') + e.line()) }
    }
    console.log(lines.join('\\n'))`
  const root = new URL('../..', import.meta.url).pathname
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {cwd: root, encoding: 'utf8'})
  expect(run.stderr).toBe('')
  expect(run.stdout.trimEnd().split('\n')).toEqual([
    'amqp publisher: unknown option exchnage. Did you mean exchange? Known: target, exchange, exchangeType, assertExchange, routingKey, mandatory, timeoutMs',
    'nats publisher needs target. e.g. nats://127.0.0.1:4222',
    'redis publisher: maxLen must be a whole number from 1 up, got "10"',
    'http publisher: headers must be an object of header names to values',
    'stdout publisher: stream must be a writable stream (process.stdout, a file stream, ...), got 1',
  ])
})
