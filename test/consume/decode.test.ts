// What decode refuses: a message that carries no outbox event is a MessageDecodeError (the
// runtimes dead-letter it at once), with a message that says what is missing.
import {describe, expect, it} from 'vitest'
import {decodeCloudEvent} from '../../src/consume/cloudevents.js'
import {decodeAmqp, decodeEnvelope, decodeNats, decodeRedis} from '../../src/consume/decode.js'
import {MessageDecodeError} from '../../src/consume/event.js'

const metadata = {
  'outbox-event-id': 'e1',
  'outbox-event-type': 'order.created',
  'outbox-aggregate-id': 'o1',
  'outbox-created-at': '2026-01-01T00:00:00.000Z',
}
const amqp = (headers: Record<string, unknown>, body = '{}') => ({content: Buffer.from(body), properties: {headers}})
const natsHeaders = (h: Record<string, string>) => ({keys: () => Object.keys(h), get: (k: string) => h[k] ?? ''})

function refused(fn: () => unknown, message: RegExp): void {
  expect(fn).toThrow(MessageDecodeError)
  expect(fn).toThrow(message)
}

describe('decode refuses what is not an outbox event', () => {
  it('amqp: no id, bad JSON body, a version that is not an integer, a time that is not one', () => {
    refused(() => decodeAmqp(amqp({})), /amqp message: no outbox-event-id/)
    refused(() => decodeAmqp(amqp(metadata, 'not json')), /amqp message: the body is not JSON/)
    refused(() => decodeAmqp(amqp({...metadata, 'outbox-aggregate-version': '1.5'})), /outbox-aggregate-version "1.5" is not an integer/)
    refused(() => decodeAmqp(amqp({...metadata, 'outbox-created-at': 'soon'})), /outbox-created-at "soon" is not a time/)
  })

  it('amqp: the id falls back to message_id; broker headers are not event headers', () => {
    const {'outbox-event-id': _, ...rest} = metadata
    const event = decodeAmqp({content: Buffer.from('[1]'), properties: {messageId: 'm1', headers: {...rest, 'x-delivery-count': 2, 'x-first-death-queue': 'q', tenant: 'a'}}})
    expect(event).toMatchObject({id: 'm1', payload: [1], headers: {tenant: 'a'}, aggregateType: null, aggregateVersion: null})
  })

  it('nats: no type; headers are read without regard to case', () => {
    refused(() => decodeNats({data: Buffer.from('{}'), headers: natsHeaders({'outbox-event-id': 'e1'})}), /nats message: no outbox-event-type/)
    const upper = Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k.toUpperCase(), v]))
    expect(decodeNats({data: Buffer.from('1'), headers: natsHeaders({...upper, 'Nats-Msg-Id': 'e1', Tenant: 't'})})).toMatchObject({id: 'e1', payload: 1, headers: {Tenant: 't'}})
  })

  it('redis: no payload, headers that are not a JSON object', () => {
    refused(() => decodeRedis({...metadata, id: 'e1', type: 't'}), /redis entry: no payload/)
    refused(() => decodeRedis({...metadata, id: 'e1', type: 't', payload: '{}', headers: '[1]'}), /headers is not an object/)
  })

  it('envelope: not an object, no payload', () => {
    refused(() => decodeEnvelope('[1]'), /envelope: not a JSON object/)
    refused(() => decodeEnvelope({id: 'e1', event_type: 't', aggregate_id: 'a', created_at: '2026-01-01T00:00:00Z'}), /envelope: no payload/)
  })

  it('cloudevents: neither mode, batch mode, another specversion, no subject, a malformed percent-encoding', () => {
    refused(() => decodeCloudEvent({headers: {'content-type': 'application/json'}, body: '{}'}), /neither structured nor binary/)
    refused(() => decodeCloudEvent({headers: {'content-type': 'application/cloudevents-batch+json'}, body: '[]'}), /batched mode is not supported/)
    const structured = {specversion: '1.0', id: 'e1', type: 't', subject: 'a', time: '2026-01-01T00:00:00Z', data: {}}
    const headers = {'content-type': 'application/cloudevents+json; charset=utf-8'}
    expect(decodeCloudEvent({headers, body: JSON.stringify(structured)})).toMatchObject({id: 'e1', aggregateId: 'a', payload: {}})
    refused(() => decodeCloudEvent({headers, body: JSON.stringify({...structured, specversion: '0.3'})}), /specversion "0.3" is not 1.0/)
    refused(() => decodeCloudEvent({headers, body: JSON.stringify({...structured, subject: undefined})}), /cloudevent: no subject/)
    const binary = {'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': 'e1', 'ce-type': 't', 'ce-subject': '%E4%B8', 'ce-time': '2026-01-01T00:00:00Z'}
    refused(() => decodeCloudEvent({headers: binary, body: '{}'}), /ce-subject is not percent-encoded UTF-8/)
  })

  it('cloudevents: data_base64 is read when data is absent', () => {
    const body = {specversion: '1.0', id: 'e1', type: 't', subject: 'a', time: '2026-01-01T00:00:00Z', data_base64: Buffer.from('{"a":1}').toString('base64')}
    expect(decodeCloudEvent({headers: {'content-type': 'application/cloudevents+json'}, body: JSON.stringify(body)}).payload).toEqual({a: 1})
  })
})
