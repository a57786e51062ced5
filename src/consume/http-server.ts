// `outbox consume --from http://HOST:PORT/PATH`: the HTTP receiver on a server of its own,
// until maxEvents requests were settled or the signal stops it (in-flight requests answered).
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {UsageError} from '../core/errors.js'
import {createHttpReceiver, type HttpReceiverOptions} from './http.js'
import type {ConsumeSummary} from './loop.js'
import {inboxConsumer} from './runtime.js'

export interface HttpServeOptions {
  /** http://HOST:PORT/PATH: where to listen, and the path the relay POSTs to */
  url: string
  /** told the address once listening (port 0 picks a free one) */
  onListening?: (url: string) => void
}

export async function serveHttp<E extends object>(serve: HttpServeOptions, options: HttpReceiverOptions<E> & {signal?: AbortSignal}): Promise<ConsumeSummary> {
  const where = new URL(serve.url)
  if (where.protocol !== 'http:') throw new UsageError(`the receiver listens on http:// only, not ${where.protocol}`, 'Terminate TLS in front of it (a proxy or load balancer)')
  await inboxConsumer(options) // refused before listening: the receiver's own Consumer is the same
  const receiver = createHttpReceiver(options)
  const server = createServer((req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== where.pathname) return void res.writeHead(404).end()
    receiver.handler(req, res)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(new UsageError(`cannot listen on ${where.host}: ${error.code ?? error.message}`, 'Pick a free port, or an address of this machine')))
    server.listen(Number(where.port || 80), where.hostname.replace(/^\[|\]$/g, ''), resolve)
  })
  const address = server.address() as AddressInfo
  serve.onListening?.(`http://${where.hostname}:${address.port}${where.pathname}`)
  const stop = () => void receiver.close()
  if (options.signal?.aborted) stop()
  options.signal?.addEventListener('abort', stop, {once: true})
  try {
    return await receiver.done
  } finally {
    options.signal?.removeEventListener('abort', stop)
    server.closeIdleConnections()
    // answered connections close on their own (connection: close); a client that holds one open does not hold us
    const force = setTimeout(() => server.closeAllConnections(), 2000).unref()
    await new Promise((resolve) => server.close(resolve))
    clearTimeout(force)
  }
}
