// The relay's small parts, no database: backoff, flag parsing, the stdout envelope, metrics
// text and log lines.
import {PassThrough} from 'node:stream'
import {describe, expect, it} from 'vitest'
import {parseBackoff} from '../../src/cli/flags.js'
import {parseHeaders, publisherOptions} from '../../src/cli/relay/publisher-options.js'
import {UsageError} from '../../src/core/errors.js'
import {StdoutPublisher} from '../../src/publishers/stdout.js'
import {backoffDelay} from '../../src/relay/backoff.js'
import type {ClaimedEvent} from '../../src/relay/claim.js'
import {createLogger} from '../../src/relay/logger.js'
import {RelayMetrics} from '../../src/relay/metrics.js'
import {onceVerdict} from '../../src/relay/once.js'

const event: ClaimedEvent = {
  id: '0190c3c2-0000-7000-8000-000000000001',
  eventType: 'order.created',
  aggregateType: null,
  aggregateId: 'order-1',
  aggregateVersion: 7,
  payload: '{"amount": 12345678901234567890}',
  headers: '{"traceparent":"00-abc-def-01"}',
  createdAt: new Date('2026-01-31T12:00:00.000Z'),
  attempts: 2,
}

describe('backoff', () => {
  const b = {baseMs: 1000, capMs: 60_000}
  it('doubles per attempt between half and all of the step, and stops at the cap', () => {
    expect(backoffDelay(1, b, () => 0)).toBe(500)
    expect(backoffDelay(1, b, () => 1)).toBe(1000)
    expect(backoffDelay(3, b, () => 0)).toBe(2000)
    expect(backoffDelay(3, b, () => 1)).toBe(4000)
    expect(backoffDelay(30, b, () => 1)).toBe(60_000)
    expect(backoffDelay(10_000, b, () => 0)).toBe(30_000)
  })
})

describe('relay flags', () => {
  it('parses --backoff BASE..CAP', () => {
    expect(parseBackoff('1s..10m')).toEqual({baseMs: 1000, capMs: 600_000})
    expect(parseBackoff('250ms..5s')).toEqual({baseMs: 250, capMs: 5000})
    for (const bad of ['1s', '1s..', '..1s', '10m..1s', 'a..b', '1s...2s']) expect(() => parseBackoff(bad), bad).toThrow(UsageError)
  })
  it('parses --header "Name: value" and refuses anything else', () => {
    expect(parseHeaders(['Authorization: Bearer x:y', 'X-Team:  core '])).toEqual({authorization: 'Bearer x:y', 'x-team': 'core'})
    expect(() => parseHeaders(['no colon'])).toThrow(/is not "Name: value"/)
    expect(() => parseHeaders([': v'])).toThrow(UsageError)
    // a name that is no header name: the http publisher's own rule (test/publishers/options.test.ts)
  })
  it('checks the target for each publisher before connecting', async () => {
    expect(await publisherOptions({publisher: 'stdout'}, {})).toEqual({name: 'stdout', options: {}})
    await expect(publisherOptions({publisher: 'http'}, {})).rejects.toThrow(/needs --target/)
    await expect(publisherOptions({publisher: 'nats', target: 'redis://x'}, {})).rejects.toThrow(/nats:\/\/ or tls:\/\//)
    // --publish-timeout and --http-concurrency arrive parsed (test/unit/cli-flags.test.ts)
    const http = await publisherOptions({publisher: 'http', target: 'https://h/e', cloudevents: 'binary', 'publish-timeout': 2000, 'http-concurrency': 4}, {})
    expect(http.options).toMatchObject({target: 'https://h/e', mode: 'binary', timeoutMs: 2000, concurrency: 4})
    expect((await publisherOptions({publisher: 'redis'}, {OUTBOX_TARGET: 'redis://127.0.0.1:6379'})).options).toMatchObject({target: 'redis://127.0.0.1:6379'})
  })
})

describe('stdout publisher', () => {
  it('writes one JSON line per event with the stored payload text spliced in', async () => {
    const stream = new PassThrough()
    let out = ''
    stream.on('data', (d) => (out += d))
    const results = await new StdoutPublisher({stream}).publish([event, {...event, id: 'x2', headers: null}])
    expect(results).toEqual([{ok: true}, {ok: true}])
    const lines = out.trimEnd().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toContain('"payload":{"amount": 12345678901234567890}')
    expect(JSON.parse(lines[0])).toMatchObject({id: event.id, event_type: 'order.created', aggregate_id: 'order-1', aggregate_version: 7, created_at: '2026-01-31T12:00:00.000Z', headers: {traceparent: '00-abc-def-01'}})
    expect(JSON.parse(lines[1]).headers).toBeNull()
  })
})

describe('metrics and logs', () => {
  it('renders Prometheus text with cumulative histogram buckets', () => {
    const m = new RelayMetrics()
    m.published = 5
    m.observeBatch(0.02)
    m.observeBatch(3)
    const text = m.render()
    expect(text).toMatch(/^# TYPE outbox_relay_published_total counter$/m)
    expect(text).toMatch(/^outbox_relay_published_total 5$/m)
    expect(text).toMatch(/^outbox_relay_batch_seconds_bucket\{le="0.025"\} 1$/m)
    expect(text).toMatch(/^outbox_relay_batch_seconds_bucket\{le="5"\} 2$/m)
    expect(text).toMatch(/^outbox_relay_batch_seconds_bucket\{le="\+Inf"\} 2$/m)
    expect(text).toMatch(/^outbox_relay_batch_seconds_count 2$/m)
    // the claim's histogram is its own: observed per claim, none here yet
    expect(text).toMatch(/^# TYPE outbox_relay_claim_seconds histogram$/m)
    expect(text).toMatch(/^outbox_relay_claim_seconds_count 0$/m)
    m.observeClaim(0.3)
    expect(m.render()).toMatch(/^outbox_relay_claim_seconds_bucket\{le="0.25"\} 0\noutbox_relay_claim_seconds_bucket\{le="0.5"\} 1$/m)
    expect(m.batches).toBe(2)
  })
  it('logs plain or JSON lines with no password in them', () => {
    const stream = new PassThrough()
    let out = ''
    stream.on('data', (d) => (out += d))
    const secret = 'amqp://relay:pa55word@mq:5672'
    createLogger({stream, secrets: [secret]}).warn('connect failed', {error: 'login pa55word refused for amqp://relay:pa55word@mq:5672'})
    createLogger({stream, format: 'json', secrets: [secret]}).info('batch', {claimed: 3, published: 3})
    createLogger({stream, quiet: true}).info('batch', {claimed: 1})
    const [text, json, extra] = out.trimEnd().split('\n')
    expect(text).toMatch(/^\S+Z warn  connect failed error="login \*\*\* refused for amqp:\/\/relay:\*\*\*@mq:5672"$/)
    expect(JSON.parse(json)).toMatchObject({level: 'info', msg: 'batch', claimed: 3, published: 3})
    expect(extra).toBeUndefined()
    expect(out).not.toContain('pa55word')
  })
})

describe('relay --once verdict', () => {
  const drain = {published: 0, retried: 0, failed: 0, batches: 0}
  const none = {total: 0, waiting: 0}
  it('0 only when nothing is left pending and nothing failed; a signal that stopped nothing changes nothing', () => {
    expect(onceVerdict({drain, left: none, failed: 0})).toEqual({exitCode: 0})
    expect(onceVerdict({drain, left: none, failed: 0, stopped: 'SIGTERM'})).toEqual({exitCode: 0})
    expect(onceVerdict({drain, left: none, failed: 2}).exitCode).toBe(1)
    expect(onceVerdict({drain, left: {total: 1, waiting: 0}, failed: 0}).exitCode).toBe(1)
  })
  it('a signal with events left: 128 + its number', () => {
    expect(onceVerdict({drain, left: {total: 5, waiting: 0}, failed: 0, stopped: 'SIGINT'})).toEqual({
      exitCode: 130,
      reason: 'stopped by a signal after the batch in flight; 5 event(s) still pending. Run it again to go on',
    })
  })
  it('says how many and why: an outage (target masked), a failed publish, a backoff from before, failed events', () => {
    const left = {total: 3, waiting: 3}
    const outage = {...drain, retried: 3, batches: 1, outage: true, error: 'amqp connect: connect ECONNREFUSED 127.0.0.1:5999'}
    expect(onceVerdict({drain: outage, left, failed: 0, target: 'amqp://u:pw@127.0.0.1:5999'}).reason).toBe(
      '3 event(s) still pending: the broker at amqp://u:***@127.0.0.1:5999 took none of the last batch (amqp connect: connect ECONNREFUSED 127.0.0.1:5999); their attempts were given back. See: outbox status',
    )
    const refused = {...drain, retried: 2, failed: 1, batches: 1, outage: false, error: 'HTTP 503 Service Unavailable'}
    expect(onceVerdict({drain: refused, left: {total: 2, waiting: 2}, failed: 1}).reason).toBe(
      '2 event(s) still pending, 1 failed: publishing failed (HTTP 503 Service Unavailable); they are retried after a backoff. See: outbox status, outbox failed',
    )
    expect(onceVerdict({drain, left, failed: 0}).reason).toBe('3 event(s) still pending: waiting out the backoff of an earlier attempt. See: outbox status')
    expect(onceVerdict({drain, left: none, failed: 4}).reason).toBe('4 event(s) failed: they failed earlier; outbox replay --failed sends them again. See: outbox status, outbox failed')
  })
})
