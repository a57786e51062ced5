// The wire part: what a fault proxy between a client and this database's server needs to know
// (outbox chaos, src/chaos/proxy/): where the server is, how to reach it through the proxy in
// plain text, and where the client's statements are in the bytes it sends, so the proxy can cut
// a connection at a protocol moment (right after the client sent COMMIT). SQLite has no server
// and no wire part.

/** A server's TCP address. */
export interface WireTarget {
  host: string
  port: number
}

export interface WirePart {
  /** The server a URL names, for a proxy to forward to; undefined when it is not TCP (a Unix socket). */
  target(url: string): WireTarget | undefined
  /**
   * The same URL through a proxy listening on 127.0.0.1:port, with TLS off: the proxy reads the
   * client's frames, which encryption would hide.
   */
  viaProxy(url: string, port: number): string
  /** A reader for one connection, from its first byte. */
  reader(): WireReader
}

/** One connection's protocol as the client speaks it, followed from both directions. */
export interface WireReader {
  /**
   * The client's bytes, in order and in chunks as they come: the SQL text of each statement
   * the client made the server run, for every frame that completed in them (the frame that
   * runs it: a simple query, or an Execute of a prepared one).
   */
  fromClient(chunk: Buffer): string[]
  /** The server's bytes, in order: the handshake's answers (whether the stream turned to TLS). */
  fromServer(chunk: Buffer): void
  /** true once the stream is encrypted or not understood: no more statements can be read */
  readonly opaque: boolean
}

/** Whether SQL text is a COMMIT (the word alone, COMMIT WORK / TRANSACTION, any case, a ';'). */
export function isCommit(text: string): boolean {
  return /^\s*commit(\s+(work|transaction))?\s*;?\s*$/i.test(text)
}

/** host and port of a URL with a TCP host, the port defaulting to `defaultPort`. */
export function urlTarget(url: string, defaultPort: number): WireTarget | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  // a socket: an empty host, a percent-encoded path as the host, or host= in the query
  if (!parsed.hostname || parsed.hostname.includes('%') || parsed.searchParams.has('host') || parsed.searchParams.has('socket')) return undefined
  return {host: parsed.hostname.replace(/^\[|\]$/g, ''), port: parsed.port ? Number(parsed.port) : defaultPort}
}

/** `url` aimed at 127.0.0.1:port, its TLS parameters replaced by `tlsOff` (name, value). */
export function urlViaProxy(url: string, port: number, drop: readonly string[], tlsOff: [string, string]): string {
  const parsed = new URL(url)
  parsed.hostname = '127.0.0.1'
  parsed.port = String(port)
  for (const name of drop) parsed.searchParams.delete(name)
  parsed.searchParams.set(...tlsOff)
  return parsed.href
}

/** Bytes that arrive in chunks, taken off the front as whole frames. */
export class ByteQueue {
  private buffer: Buffer = Buffer.alloc(0)

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk
  }

  get length(): number {
    return this.buffer.length
  }

  peek(n: number): Buffer | undefined {
    return this.buffer.length >= n ? this.buffer.subarray(0, n) : undefined
  }

  take(n: number): Buffer {
    const frame = this.buffer.subarray(0, n)
    this.buffer = this.buffer.subarray(n)
    return frame
  }
}
