// A broker's answers as the fault proxy reads them: the server's bytes cut into whole protocol
// units (frames, messages, replies), each marked when it acknowledges a publish, so that the
// proxy can hold back the acks alone and leave the connection's set-up and everything else on
// time. A partial unit waits in the reader for the rest of its bytes.
//   AMQP 0-9-1: frames (type, channel, size, payload, 0xCE); a publisher confirm is a method
//     frame (type 1) of Basic.Ack (class 60, method 80).
//   NATS: protocol lines; a JetStream PubAck is a MSG to the client's _INBOX.> whose JSON
//     payload starts {"stream": ("duplicate":true when the stream's dedupe window dropped it).
//   Redis (RESP2/3): one reply per command; XADD answers with the new entry's id, a bulk
//     string "<ms>-<seq>".

export type AckProtocol = 'amqp' | 'nats' | 'redis'

export interface Unit {
  bytes: Buffer
  /** acknowledges a publish */
  ack: boolean
  /** an ack of a publish the broker already had (JetStream's dedupe): a resend reached it */
  duplicate?: boolean
}

export class AckReader {
  private pending: Buffer = Buffer.alloc(0)

  constructor(private readonly cut: (buf: Buffer) => {length: number; ack: boolean; duplicate?: boolean} | undefined) {}

  /** The whole units the chunk completes, in order. */
  fromServer(chunk: Buffer): Unit[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk
    const units: Unit[] = []
    for (let next = this.cut(this.pending); next; next = this.cut(this.pending)) {
      units.push({bytes: this.pending.subarray(0, next.length), ack: next.ack, duplicate: next.duplicate})
      this.pending = this.pending.subarray(next.length)
    }
    return units
  }
}

export function ackReader(protocol: AckProtocol): AckReader {
  return new AckReader({amqp: amqpFrame, nats: natsUnit, redis: redisReply}[protocol])
}

const FRAME_HEADER = 7
const BASIC_CLASS = 60
const BASIC_ACK = 80

function amqpFrame(buf: Buffer) {
  if (buf.length < FRAME_HEADER) return undefined
  const length = FRAME_HEADER + buf.readUInt32BE(3) + 1
  if (buf.length < length) return undefined
  const method = buf[0] === 1 && length >= FRAME_HEADER + 5
  return {length, ack: method && buf.readUInt16BE(FRAME_HEADER) === BASIC_CLASS && buf.readUInt16BE(FRAME_HEADER + 2) === BASIC_ACK}
}

const CRLF = Buffer.from('\r\n')
const PUB_ACK = /^\{\s*"stream"\s*:/
const DUPLICATE = /"duplicate"\s*:\s*true/

function natsUnit(buf: Buffer) {
  const eol = buf.indexOf(CRLF)
  if (eol < 0) return undefined
  const line = buf.toString('latin1', 0, eol).split(' ')
  const op = line[0].toUpperCase()
  if (op !== 'MSG' && op !== 'HMSG') return {length: eol + 2, ack: false}
  // MSG <subject> <sid> [reply-to] <#bytes>; HMSG ... <#header bytes> <#total bytes>
  const size = Number(line[line.length - 1])
  const length = eol + 2 + size + 2
  if (buf.length < length) return undefined
  const payload = buf.toString('utf8', eol + 2, eol + 2 + size)
  const ack = op === 'MSG' && line[1].startsWith('_INBOX.') && PUB_ACK.test(payload)
  return {length, ack, duplicate: ack && DUPLICATE.test(payload)}
}

const ENTRY_ID = /^\d+-\d+$/

function redisReply(buf: Buffer) {
  const end = respEnd(buf, 0)
  if (end < 0) return undefined
  const ack = buf[0] === 0x24 /* $ */ && ENTRY_ID.test(buf.toString('latin1', buf.indexOf(CRLF) + 2, end - 2))
  return {length: end, ack}
}

/** Where the RESP value at pos ends, or -1 while it is incomplete. */
function respEnd(buf: Buffer, pos: number): number {
  const eol = buf.indexOf(CRLF, pos)
  if (eol < 0) return -1
  const type = String.fromCharCode(buf[pos])
  const n = Number(buf.toString('latin1', pos + 1, eol))
  let at = eol + 2
  if ('$=!'.includes(type)) {
    // a blob: its length, then its bytes (none for the null -1)
    if (n < 0) return at
    return buf.length >= at + n + 2 ? at + n + 2 : -1
  }
  if ('*~>%|'.includes(type)) {
    // an aggregate: n values (key and value pairs in a map or attribute)
    const values = n < 0 ? 0 : '%|'.includes(type) ? 2 * n : n
    for (let i = 0; i < values; i++) {
      at = respEnd(buf, at)
      if (at < 0) return -1
    }
    return at
  }
  // a simple line: +OK, -ERR, :1, _, #t, ,1.5, (big number
  return at
}
