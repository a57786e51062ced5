// The relay's metrics endpoint (runRelayService's metricsPort): Prometheus text on GET /metrics.
// Counters and the batch histogram come from the relay process; backlog, oldest pending age and
// latency are read from the database at scrape time with `outbox status`'s queries, under the
// same names as `status --format prometheus`.
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {UsageError} from '../core/errors.js'
import {renderPrometheus} from '../render/prometheus.js'
import {family, sample} from '../render/prometheus-text.js'
import {relayStatus} from './backlog.js'
import type {RelayMetrics} from './metrics.js'

export interface MetricsServer {
  port: number
  close(): Promise<void>
}

export async function serveMetrics(options: {db: Db; names: TableNames; metrics: RelayMetrics; port: number; host?: string}): Promise<MetricsServer> {
  const server: Server = createServer(async (req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, {'content-type': 'text/plain'}).end('see /metrics\n')
      return
    }
    let body: string
    try {
      body = options.metrics.render() + renderPrometheus(await relayStatus(options.db, options.names)) + up(1)
    } catch {
      // The database is down: still serve the process counters, and say so.
      body = options.metrics.render() + up(0)
    }
    res.writeHead(200, {'content-type': 'text/plain; version=0.0.4'}).end(body)
  })
  const host = options.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(bindError(error, host, options.port)))
    server.listen(options.port, host, () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** the family the server adds to the relay's and status's: whether status's read succeeded */
export const SERVER_FAMILIES = ['outbox_database_up']

function up(value: number): string {
  return [...family('outbox_database_up', 'gauge', 'Whether the backlog query succeeded.'), sample('outbox_database_up', {}, value)].join('\n') + '\n'
}

/** A port in use or not ours to bind is the caller's to change: one usage line naming the option. */
function bindError(error: Error & {code?: string}, host: string, port: number): Error {
  if (error.code !== 'EADDRINUSE' && error.code !== 'EACCES') return error
  const why = error.code === 'EADDRINUSE' ? 'the port is in use' : 'not allowed to bind it'
  return new UsageError(`cannot serve metrics on ${host}:${port} (${why})`, (o) => `Pick another ${o('port')}, or 0 for any free one`)
}
