// The "business transaction" of the producer benchmarks: insert an order row, optionally
// write its event with writeEvent / writeEventSync, commit. Native drivers, as a user has them.
import {randomUUID} from 'node:crypto'
import {driver, lib} from './lib-under-test.js'

// The build under test's own drivers (see driver()): its connections and these share one SQLite.
const [Database, mysql, pg] = await Promise.all([driver('better-sqlite3'), driver('mysql2/promise'), driver('pg')])

const ORDER_DDL = {
  postgres: (t) => `CREATE TABLE ${t} (id uuid PRIMARY KEY, customer text NOT NULL, total_cents integer NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
  mysql: (t) => `CREATE TABLE ${t} (id CHAR(36) CHARACTER SET ascii NOT NULL PRIMARY KEY, customer VARCHAR(255) NOT NULL, total_cents INT NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB`,
  sqlite: (t) => `CREATE TABLE ${t} (id TEXT PRIMARY KEY, customer TEXT NOT NULL, total_cents INTEGER NOT NULL, created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`,
}

const event = (orderId) => ({eventType: 'order.created', aggregateType: 'order', aggregateId: orderId, payload: {orderId, totalCents: 1999}})

/**
 * A producer on its own connection. order(withEvent, options) runs one business transaction
 * and returns {id, committingAt, committedAt}: the event id, performance.now() just before
 * COMMIT was sent and just after it returned.
 */
export async function openProducer(dialect, url, names, index = 0) {
  const orders = `${names.outbox}_orders`
  // The first producer of a table set owns the orders table; others share it.
  const owner = index === 0
  const server = dialect === 'postgres' ? await pgSession(url) : dialect === 'mysql' ? await mysqlSession(url) : undefined
  if (server) {
    if (owner) await server.run(ORDER_DDL[dialect](orders), [])
    const insert = `INSERT INTO ${orders} (id, customer, total_cents) VALUES (${server.marks})`
    return {
      async order(withEvent, options) {
        const orderId = randomUUID()
        await server.run(server.begin, [])
        await server.run(insert, [orderId, 'customer-1', 1999])
        const id = withEvent ? await lib.writeEvent(server.executor, event(orderId), {tables: names, ...options}) : undefined
        const committingAt = performance.now()
        await server.run('COMMIT', [])
        return {id, committingAt, committedAt: performance.now()}
      },
      close: async () => {
        if (owner) await server.run(`DROP TABLE IF EXISTS ${orders}`, []).catch(() => {})
        await server.end()
      },
    }
  }
  // SQLite: the same settings as the relay's connection (WAL, synchronous = NORMAL).
  const database = new Database(url.replace(/^sqlite:/, ''), {timeout: 5000})
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  if (owner) database.exec(ORDER_DDL.sqlite(orders))
  const insert = database.prepare(`INSERT INTO ${orders} (id, customer, total_cents) VALUES (?, ?, ?)`)
  let committingAt = 0
  const tx = database.transaction((orderId, withEvent) => {
    insert.run(orderId, 'customer-1', 1999)
    const id = withEvent ? lib.writeEventSync(database, event(orderId), {tables: names}) : undefined
    committingAt = performance.now()
    return id
  })
  return {
    async order(withEvent) {
      const id = tx(randomUUID(), withEvent)
      return {id, committingAt, committedAt: performance.now()}
    },
    close: async () => {
      if (owner) database.exec(`DROP TABLE IF EXISTS ${orders}`)
      database.close()
    },
  }
}

async function pgSession(url) {
  const client = new pg.Client({connectionString: url})
  await client.connect()
  // a server restart or a cut connection fails the query in flight; unheard, it would crash the process
  client.on('error', () => {})
  return {executor: client, begin: 'BEGIN', marks: '$1, $2, $3', run: (text, values) => client.query(text, values), end: () => client.end()}
}

// execute(): a server-side prepared statement, as writeEvent uses on mysql2.
async function mysqlSession(url) {
  const u = new URL(url)
  const connection = await mysql.createConnection({host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password), database: u.pathname.slice(1)})
  connection.on('error', () => {})
  const run = (text, values) => (values.length ? connection.execute(text, values) : connection.query(text))
  return {executor: connection, begin: 'START TRANSACTION', marks: '?, ?, ?', run, end: () => connection.end()}
}
