// The MySQL / MariaDB client/server protocol, as far as a fault proxy reads it (dialects/wire.ts):
// packets of a 3-byte little-endian length, a sequence number and the payload. The server
// greets; the client's first packet is its handshake response (with CLIENT_SSL and nothing
// after the capability block, an SSL request: TLS follows and the stream is opaque); the
// authentication exchange continues a sequence, and every command starts a new one (sequence
// 0). A statement runs by COM_QUERY (0x03, then the SQL text; mysql2 does not ask for query
// attributes, which would come between) or by COM_STMT_EXECUTE (0x17) of a statement prepared
// by COM_STMT_PREPARE (0x16, then the SQL text): mysql2's execute(), COMMIT included. The
// statement's id is in the server's answer to the prepare (COM_STMT_PREPARE_OK: 0x00, the id),
// so the reader looks at the server's first packet after a prepare too.
import {ByteQueue, urlTarget, urlViaProxy, type WirePart, type WireReader} from '../wire.js'

const COM_QUERY = 0x03
const COM_STMT_PREPARE = 0x16
const COM_STMT_EXECUTE = 0x17
const COM_STMT_CLOSE = 0x19
const CLIENT_SSL = 0x0800
/** an SSL request is the handshake response's fixed part only: capabilities, max packet, charset, filler */
const SSL_REQUEST_LENGTH = 32
/** COM_STMT_PREPARE_OK: status 0x00, id, columns, params, filler, warnings */
const PREPARE_OK_LENGTH = 12
const DEFAULT_PORT = 3306

class MysqlReader implements WireReader {
  opaque = false
  private handshook = false
  private readonly client = new ByteQueue()
  /** statement ids the server gave, and their SQL text (until the client closes them) */
  private readonly prepared = new Map<number, string>()
  /** a prepare sent, its answer not read yet: the text, and the server's bytes so far */
  private preparing?: {text: string; answer: ByteQueue}

  fromClient(chunk: Buffer): string[] {
    if (this.opaque) return []
    this.client.push(chunk)
    const run: string[] = []
    for (;;) {
      const head = this.client.peek(4)
      if (!head) return run
      const length = head.readUIntLE(0, 3)
      if (this.client.length < 4 + length) return run
      const sequence = head[3]
      const payload = this.client.take(4 + length).subarray(4)
      if (!this.handshook) {
        this.handshook = true
        if (payload.length >= 4 && payload.readUInt32LE(0) & CLIENT_SSL && length === SSL_REQUEST_LENGTH) {
          this.opaque = true
          return run
        }
      } else if (sequence === 0) {
        this.command(payload, run)
      }
    }
  }

  /**
   * The server's bytes: only its answer to a prepare is read. mysql2 sends a command once the
   * last one was answered in full, so the first packet after a prepare is its answer.
   */
  fromServer(chunk: Buffer): void {
    const pending = this.preparing
    if (!pending || this.opaque) return
    pending.answer.push(chunk)
    const head = pending.answer.peek(4)
    const needed = head && 4 + Math.min(head.readUIntLE(0, 3), PREPARE_OK_LENGTH)
    if (!needed || pending.answer.length < needed) return
    this.preparing = undefined
    const payload = pending.answer.take(needed).subarray(4)
    // an error packet (0xff) prepared nothing
    if (payload[0] === 0x00 && payload.length >= 5) this.prepared.set(payload.readUInt32LE(1), pending.text)
  }

  private command(payload: Buffer, run: string[]): void {
    const code = payload[0]
    if (code === COM_QUERY) run.push(payload.toString('utf8', 1))
    else if (code === COM_STMT_PREPARE) this.preparing = {text: payload.toString('utf8', 1), answer: new ByteQueue()}
    else if ((code === COM_STMT_EXECUTE || code === COM_STMT_CLOSE) && payload.length >= 5) {
      const id = payload.readUInt32LE(1)
      const text = this.prepared.get(id)
      if (code === COM_STMT_CLOSE) this.prepared.delete(id)
      else if (text !== undefined) run.push(text)
    }
  }
}

export const wire: WirePart = {
  target: (url) => urlTarget(url, DEFAULT_PORT),
  // every TLS spelling the URL may carry gives way to the MySQL client's ssl-mode=DISABLED
  viaProxy: (url, port) => urlViaProxy(url, port, ['ssl', 'sslmode', 'ssl-mode'], ['ssl-mode', 'DISABLED']),
  reader: () => new MysqlReader(),
}
