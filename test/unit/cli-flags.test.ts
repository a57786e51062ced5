// The CLI's typed flags through oclif's own parser (values, defaults, the one usage line a bad
// value gives), and how library errors that name options are spelled for CLI users.
import {createServer} from 'node:net'
import {Parser, type Interfaces} from '@oclif/core'
import {describe, expect, it} from 'vitest'
import {backoff, duration, eventId, eventIds, idList, names, nonNegativeInt, positiveInt, timePoint} from '../../src/cli/flags.js'
import {asFlag} from '../../src/cli/option-flags.js'
import {resolveUrl} from '../../src/config.js'
import {OutboxError, UsageError} from '../../src/core/errors.js'
import {parseDuration, parseTimePoint} from '../../src/core/time.js'
import {serveMetrics} from '../../src/relay/metrics-server.js'

/** Parses argv with these flags as a command would: its values, or the line `outbox: ...` would print. */
async function parse<F extends Interfaces.FlagInput>(flags: F, argv: string[]) {
  return (await Parser.parse(argv, {flags})).flags
}

async function refusal(flags: Interfaces.FlagInput, argv: string[]): Promise<string> {
  const error = await Parser.parse(argv, {flags}).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error, argv.join(' ')).toBeInstanceOf(UsageError)
  return (error as UsageError).line(asFlag)
}

describe('typed flags give values', () => {
  const flags = {
    lease: duration({description: 'd', default: '30s'}),
    delay: duration({description: 'd', allowZero: true}),
    since: timePoint({description: 't'}),
    batch: positiveInt({description: 'n', default: '1000', max: 10_000}),
    port: nonNegativeInt({description: 'n', max: 65_535}),
    backoff: backoff({description: 'b', default: '1s..10m'}),
    id: eventId({description: 'i', default: '00000000-0000-0000-0000-00000000000A'}),
    ids: eventIds({description: 'i'}),
    list: idList({description: 'i'}),
    steps: names(['a', 'b', 'c'] as const, {none: true})({description: 's'}),
  }

  it('from defaults written as on the command line', async () => {
    const values = await parse(flags, [])
    expect(values).toMatchObject({lease: 30_000, batch: 1000, backoff: {baseMs: 1000, capMs: 600_000}, id: '00000000-0000-0000-0000-00000000000a'})
    expect(values.since).toBeUndefined()
    expect(values.ids).toBeUndefined()
  })

  it('from the command line', async () => {
    const values = await parse(flags, ['--lease', '1h30m', '--delay', '0s', '--batch', ' 7 ', '--port', '0', '--backoff', '250ms..5s', '--steps', 'c, a'])
    expect(values).toMatchObject({lease: 5_400_000, delay: 0, batch: 7, port: 0, backoff: {baseMs: 250, capMs: 5000}, steps: ['c', 'a']})
    expect((await parse(flags, ['--steps', 'none'])).steps).toEqual([])
  })

  it('a time as a Date; a duration ago as its text, to be read on the database clock later', async () => {
    expect((await parse(flags, ['--since', '2026-05-31T10:00:00+02:00'])).since).toEqual(new Date('2026-05-31T08:00:00Z'))
    expect((await parse(flags, ['--since', '2h'])).since).toBe('2h')
  })

  it('event ids: one lowercased; a list kept as given, an empty one as not given', async () => {
    const upper = '0190C3C2-6C1A-7B9E-8D2F-3A4B5C6D7E8F'
    expect((await parse(flags, ['--id', upper])).id).toBe(upper.toLowerCase())
    expect((await parse(flags, ['--ids', ` ${upper} ,0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e90`])).ids).toEqual([upper, '0190c3c2-6c1a-7b9e-8d2f-3a4b5c6d7e90'])
    expect((await parse(flags, ['--ids', ''])).ids).toBeUndefined()
    expect((await parse(flags, ['--list', 'x, y,'])).list).toEqual(['x', 'y'])
  })

  it('an empty value as not given where a flag says so', async () => {
    const optional = {'publish-timeout': duration({description: 'd', emptyIsUnset: true}), timeout: duration({description: 'd'})}
    expect((await parse(optional, ['--publish-timeout', '']))['publish-timeout']).toBeUndefined()
    expect(await refusal(optional, ['--timeout', ''])).toBe('--timeout "" is not a duration. Use a number with a unit: 500ms, 30s, 5m, 2h, 7d')
  })
})

describe('a bad value is one line naming its flag', () => {
  const flags = {
    batch: positiveInt({description: 'n', default: '1000', max: 10_000}),
    'max-pending': nonNegativeInt({description: 'n', max: 1e12}),
    'min-published-age': duration({description: 'd', default: '24h', allowZero: true}),
    lease: duration({description: 'd'}),
    since: timePoint({description: 't'}),
    backoff: backoff({description: 'b'}),
    id: eventId({description: 'i'}),
    ids: eventIds({description: 'i'}),
    steps: names(['a', 'b'] as const)({description: 's'}),
  }
  it.each([
    [['--batch', '0'], '--batch must be between 1 and 10000. Use e.g. --batch 100'],
    [['--batch', '1.5'], '--batch "1.5" is not a positive whole number. Use e.g. --batch 100'],
    [['--max-pending', '-1'], '--max-pending "-1" is not a whole number. Use e.g. --max-pending 10'],
    [['--max-pending', '1000000000001'], '--max-pending must be at most 1000000000000. Use a whole number from 0 to 1000000000000'],
    [['--min-published-age', '-1h'], '--min-published-age "-1h" is not a duration. Use a number with a unit: 500ms, 30s, 5m, 2h, 7d'],
    [['--lease', '0s'], '--lease must be greater than zero. Use e.g. 30s'],
    [['--lease', '3651d'], '--lease "3651d" is too long. Use at most 3650d'],
    [['--since', 'yesterday'], '--since "yesterday" is not a time. Use ISO-8601 with an offset (2026-01-31T12:00:00Z) or a duration meaning ago (30m, 2h, 7d)'],
    [['--since', '0999-12-31'], '--since "0999-12-31" is before the year 1000. Give a time from the years 1000-9999'],
    [['--backoff', '10m..1s'], '--backoff cap 1s is shorter than its base 10m. Use e.g. --backoff 1s..10m'],
    [['--backoff', 'x..1s'], '--backoff "x" is not a duration. Use a number with a unit: 500ms, 30s, 5m, 2h, 7d'],
    [['--id', 'x'], '--id: "x" is not an event id. Give the UUID of an event'],
    [['--ids', ','], '--ids is empty. Give comma-separated event ids'],
    [['--steps', 'a,z'], '--steps: unknown z. Use a comma-separated list of: a, b'],
    [['--steps', ''], '--steps: unknown (empty list). Use a comma-separated list of: a, b'],
  ])('%j', async (argv, line) => {
    expect(await refusal(flags, argv)).toBe(line)
  })
})

describe('errors name options: the library as it spells them, the CLI as flags', () => {
  it('spells options as the flags a user types', () => {
    const spelled = ['minPublishedAgeMs', 'inboxTable', 'archiveTable', 'fromArchive', 'toFile', 'failedOnly', 'types', 'aggregateId', 'aggregateType', 'scenarioPath', 'port', 'metricsPort', 'since', 'url', 'min-published-age']
    expect(spelled.map(asFlag)).toEqual([
      '--min-published-age', '--inbox-table', '--archive-table', '--from-archive', '--to-file', '--failed', '--type', '--aggregate', '--aggregate-type', '--scenario', '--metrics-port', '--metrics-port', '--since', '--url', '--min-published-age',
    ])
  })

  it('an error records the options its texts name, and spells them on request', () => {
    const error = new UsageError((o) => `${o('failedOnly')} and ${o('fromArchive')} exclude each other`, (o) => `Drop ${o('fromArchive')}`)
    expect(error.message).toBe('failedOnly and fromArchive exclude each other')
    expect(error.hint).toBe('Drop fromArchive')
    expect(error.options).toEqual(['failedOnly', 'fromArchive'])
    expect(error.option).toBe('failedOnly')
    expect(error.line()).toBe('failedOnly and fromArchive exclude each other. Drop fromArchive')
    expect(error.line(asFlag)).toBe('--failed and --from-archive exclude each other. Drop --from-archive')
    // oclif decorates the message of an error thrown while parsing a flag: the line is built from the texts
    error.message = `Parsing --failed \n\t${error.message}\nSee more help with --help`
    expect(error.line(asFlag)).toBe('--failed and --from-archive exclude each other. Drop --from-archive')
    const fixed = new OutboxError('no database URL')
    expect([fixed.options, fixed.option, fixed.line(asFlag)]).toEqual([[], undefined, 'no database URL'])
  })

  it('durations and times: the option as the caller names it', () => {
    const error = captured(() => parseDuration('soon', 'leaseMs'))
    expect(error.line()).toBe('leaseMs "soon" is not a duration. Use a number with a unit: 500ms, 30s, 5m, 2h, 7d')
    expect(error.line(asFlag)).toBe('--lease "soon" is not a duration. Use a number with a unit: 500ms, 30s, 5m, 2h, 7d')
    expect(captured(() => parseTimePoint('2026-05-31T10:00:00.0005Z', 'until')).line(asFlag)).toMatch(/^--until ".*" is finer than a millisecond/)
  })

  it('config: the url option', () => {
    const error = captured(() => resolveUrl(undefined, {}))
    expect(error.line()).toBe('no database URL. Pass url, set OUTBOX_DATABASE_URL, or put "url" in outbox.config.json (postgres://, mysql://, mariadb:// or sqlite:PATH)')
    expect(error.line(asFlag)).toBe('no database URL. Pass --url, set OUTBOX_DATABASE_URL, or put "url" in outbox.config.json (postgres://, mysql://, mariadb:// or sqlite:PATH)')
  })

  it('metrics: a port in use names the port option', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as {port: number}).port
    try {
      const error = await serveMetrics({db: {} as never, names: {} as never, metrics: {} as never, port}).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(UsageError)
      expect((error as UsageError).line()).toBe(`cannot serve metrics on 127.0.0.1:${port} (the port is in use). Pick another port, or 0 for any free one`)
      expect((error as UsageError).line(asFlag)).toBe(`cannot serve metrics on 127.0.0.1:${port} (the port is in use). Pick another --metrics-port, or 0 for any free one`)
    } finally {
      taken.close()
    }
  })
})

function captured(fn: () => unknown): OutboxError {
  try {
    fn()
  } catch (error) {
    if (error instanceof OutboxError) return error
    throw error
  }
  throw new Error('expected an OutboxError')
}
