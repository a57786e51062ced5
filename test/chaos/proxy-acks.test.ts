// The fault proxy's reading of broker protocols (src/chaos/proxy/acks.ts): whole units out of
// chunks cut anywhere, the publish acks marked, nothing else. (On the real brokers:
// test/publishers/broker-faults.test.ts.)
import {describe, expect, it} from 'vitest'
import {ackReader, type AckProtocol} from '../../src/chaos/proxy/acks.js'

function amqpFrame(type: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(7)
  header.writeUInt8(type, 0)
  header.writeUInt16BE(1, 1)
  header.writeUInt32BE(payload.length, 3)
  return Buffer.concat([header, payload, Buffer.from([0xce])])
}
const method = (classId: number, methodId: number, args = Buffer.alloc(9)) => {
  const head = Buffer.alloc(4)
  head.writeUInt16BE(classId, 0)
  head.writeUInt16BE(methodId, 2)
  return amqpFrame(1, Buffer.concat([head, args]))
}

const msg = (subject: string, payload: string) => Buffer.from(`MSG ${subject} 1  ${Buffer.byteLength(payload)}\r\n${payload}\r\n`)

const SAMPLES: Record<AckProtocol, {bytes: Buffer; ack: boolean; duplicate?: boolean}[]> = {
  amqp: [
    {bytes: method(10, 10, Buffer.alloc(40)), ack: false}, // Connection.Start
    {bytes: method(60, 80), ack: true}, // Basic.Ack
    {bytes: amqpFrame(8, Buffer.alloc(0)), ack: false}, // heartbeat
    {bytes: method(60, 50), ack: false}, // Basic.Return
    {bytes: method(60, 80), ack: true},
  ],
  nats: [
    {bytes: Buffer.from('INFO {"server_id":"x","max_payload":1048576}\r\n'), ack: false},
    {bytes: Buffer.from('PING\r\n'), ack: false},
    {bytes: msg('_INBOX.A.B', '{"stream":"S", "seq":1}'), ack: true, duplicate: false},
    {bytes: msg('_INBOX.A.C', '{"stream":"S", "seq":1,"duplicate": true}'), ack: true, duplicate: true},
    {bytes: msg('_INBOX.A.D', '{"type":"io.nats.jetstream.api.v1.stream_info_response"}'), ack: false},
    {bytes: msg('orders.created', '{"stream":"not a reply"}'), ack: false},
    {bytes: Buffer.from('HMSG orders.x 2 _INBOX.R 12 17\r\nNATS/1.0\r\n\r\nhello\r\n'), ack: false},
  ],
  redis: [
    {bytes: Buffer.from('+OK\r\n'), ack: false},
    {bytes: Buffer.from('$15\r\n1700000000000-0\r\n'), ack: true},
    {bytes: Buffer.from('*2\r\n$3\r\nfoo\r\n*1\r\n:1\r\n'), ack: false},
    {bytes: Buffer.from('%1\r\n+server\r\n$5\r\nredis\r\n'), ack: false},
    {bytes: Buffer.from('$-1\r\n'), ack: false},
    {bytes: Buffer.from('$15\r\n1700000000000-1\r\n'), ack: true},
  ],
}

describe('the fault proxy reads a broker\'s publish acks', () => {
  for (const protocol of ['amqp', 'nats', 'redis'] as const) {
    it(`${protocol}: whole units and their acks, whether the bytes come at once or one at a time`, () => {
      const stream = Buffer.concat(SAMPLES[protocol].map((u) => u.bytes))
      const want = SAMPLES[protocol].map((u) => ({bytes: u.bytes.toString('latin1'), ack: u.ack, duplicate: u.duplicate || undefined}))
      const read = (chunks: Buffer[]) => {
        const reader = ackReader(protocol)
        return chunks.flatMap((c) => reader.fromServer(c)).map((u) => ({bytes: u.bytes.toString('latin1'), ack: u.ack, duplicate: u.duplicate || undefined}))
      }
      expect(read([stream])).toEqual(want)
      expect(read([...stream].map((b) => Buffer.from([b])))).toEqual(want)
    })
  }
})
