// The MySQL / MariaDB client/server protocol, as far as a fault proxy reads it (dialects/wire.ts):
// packets of a 3-byte little-endian length, a sequence number and the payload. The server
// greets; the client's first packet is its handshake response (with CLIENT_SSL and nothing
// after the capability block, an SSL request: TLS follows and the stream is opaque); the
// authentication exchange continues a sequence, and every command starts a new one (sequence
// 0). A statement runs by COM_QUERY (0x03, then the SQL text; mysql2 does not ask for query
// attributes, which would come between). Prepared statements (COM_STMT_*) are not followed.
import {ByteQueue, urlTarget, urlViaProxy, type WirePart, type WireReader} from '../wire.js'

const COM_QUERY = 0x03
const CLIENT_SSL = 0x0800
/** an SSL request is the handshake response's fixed part only: capabilities, max packet, charset, filler */
const SSL_REQUEST_LENGTH = 32
const DEFAULT_PORT = 3306

class MysqlReader implements WireReader {
  opaque = false
  private handshook = false
  private readonly client = new ByteQueue()

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
      } else if (sequence === 0 && payload[0] === COM_QUERY) {
        run.push(payload.toString('utf8', 1))
      }
    }
  }

  fromServer(): void {
    // the client's packets say all a proxy needs (whether TLS follows is in its SSL request)
  }
}

export const wire: WirePart = {
  target: (url) => urlTarget(url, DEFAULT_PORT),
  // every TLS spelling the URL may carry gives way to the MySQL client's ssl-mode=DISABLED
  viaProxy: (url, port) => urlViaProxy(url, port, ['ssl', 'sslmode', 'ssl-mode'], ['ssl-mode', 'DISABLED']),
  reader: () => new MysqlReader(),
}
