// A loopback TCP proxy between a client and a real broker, so a test can take the broker
// "down" (refuse and cut every connection) and bring it back on the same port.
import {createServer, connect, type Server, type Socket} from 'node:net'
import type {AddressInfo} from 'node:net'

export class TcpProxy {
  port = 0
  private server?: Server
  private readonly sockets = new Set<Socket>()

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect({host: this.targetHost, port: this.targetPort})
      for (const s of [client, upstream]) {
        this.sockets.add(s)
        s.on('close', () => this.sockets.delete(s))
        s.on('error', () => {
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream)
      upstream.pipe(client)
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', () => resolve())
    })
    this.port = (server.address() as AddressInfo).port
    this.server = server
  }

  /** Cuts every open connection and stops listening: the broker is unreachable. */
  async down(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
