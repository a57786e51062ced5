// PostgreSQL's frontend/backend protocol, as far as a fault proxy reads it (dialects/wire.ts):
// the startup message (after an SSLRequest or GSSENCRequest the server's one-byte answer says
// whether TLS follows: then the stream is opaque), then typed messages: a byte, an int32 length
// counting itself, the body. Statements run by a simple Query ('Q': the SQL text) or by an
// Execute ('E') of a portal Bound ('B') to a statement Parsed ('P') before, named or not.
import {ByteQueue, urlTarget, urlViaProxy, type WirePart, type WireReader} from '../wire.js'

/** startup codes that ask for encryption first (the server answers one byte: S/G or N) */
const ENCRYPTION_REQUESTS = new Set([80877103, 80877104])
/** the cancel request: a connection of its own that carries no statements */
const CANCEL_REQUEST = 80877102
const DEFAULT_PORT = 5432

/** A NUL-terminated string at `offset`, and the offset after its NUL. */
function cString(body: Buffer, offset: number): [string, number] {
  const end = body.indexOf(0, offset)
  const stop = end < 0 ? body.length : end
  return [body.toString('utf8', offset, stop), stop + 1]
}

class PostgresReader implements WireReader {
  opaque = false
  private phase: 'startup' | 'encryption-answer' | 'messages' = 'startup'
  private readonly client = new ByteQueue()
  /** prepared statements and portals by name ('' is the unnamed one): their SQL text */
  private readonly statements = new Map<string, string>()
  private readonly portals = new Map<string, string>()

  fromClient(chunk: Buffer): string[] {
    if (this.opaque) return []
    this.client.push(chunk)
    const run: string[] = []
    for (;;) {
      if (this.phase === 'encryption-answer' || this.opaque) return run
      if (this.phase === 'startup') {
        const head = this.client.peek(8)
        if (!head || this.client.length < head.readInt32BE(0)) return run
        const code = head.readInt32BE(4)
        this.client.take(head.readInt32BE(0))
        if (ENCRYPTION_REQUESTS.has(code)) this.phase = 'encryption-answer'
        else if (code === CANCEL_REQUEST) this.opaque = true
        else this.phase = 'messages'
        continue
      }
      const head = this.client.peek(5)
      if (!head || this.client.length < 1 + head.readInt32BE(1)) return run
      const type = String.fromCharCode(head[0])
      const body = this.client.take(1 + head.readInt32BE(1)).subarray(5)
      const text = this.message(type, body)
      if (text !== undefined) run.push(text)
    }
  }

  fromServer(chunk: Buffer): void {
    if (this.phase !== 'encryption-answer' || chunk.length === 0) return
    // N: go on in plain text with a startup message; S or G: TLS / GSS from here
    if (chunk[0] === 0x4e) this.phase = 'startup'
    else this.opaque = true
  }

  /** One message's statement text when it makes the server run one. */
  private message(type: string, body: Buffer): string | undefined {
    if (type === 'Q') return cString(body, 0)[0]
    if (type === 'P') {
      const [name, next] = cString(body, 0)
      this.statements.set(name, cString(body, next)[0])
    } else if (type === 'B') {
      const [portal, next] = cString(body, 0)
      this.portals.set(portal, this.statements.get(cString(body, next)[0]) ?? '')
    } else if (type === 'E') {
      return this.portals.get(cString(body, 0)[0])
    }
    return undefined
  }
}

export const wire: WirePart = {
  target: (url) => urlTarget(url, DEFAULT_PORT),
  // libpq's sslmode (and pg's ssl=) give way to sslmode=disable
  viaProxy: (url, port) => urlViaProxy(url, port, ['ssl', 'sslmode', 'uselibpqcompat'], ['sslmode', 'disable']),
  reader: () => new PostgresReader(),
}
