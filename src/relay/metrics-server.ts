// `--metrics-port`: Prometheus text on GET /metrics. Counters come from the relay process;
// backlog and oldest pending age are read from the database at scrape time.
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import type {TableNames} from '../../dialects/index.js'
import type {Db} from '../db/index.js'
import {relayBacklog} from './backlog.js'
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
    const up = (value: number) => `# HELP outbox_database_up Whether the backlog query succeeded.\n# TYPE outbox_database_up gauge\noutbox_database_up ${value}\n`
    let body: string
    try {
      const backlog = await relayBacklog(options.db, options.names)
      body = options.metrics.render({pending: backlog.pending, oldestPendingSeconds: backlog.oldestPendingSeconds, failedTotal: backlog.failed}) + up(1)
    } catch {
      // The database is down: still serve the process counters, and say so.
      body = options.metrics.render() + up(0)
    }
    res.writeHead(200, {'content-type': 'text/plain; version=0.0.4'}).end(body)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve())
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
