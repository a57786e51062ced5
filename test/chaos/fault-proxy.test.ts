// The harness's fault proxy (src/chaos/proxy/) between a real client and the real servers:
// pass-through, delay, black-hole, cut, and a COMMIT cut at its protocol moment: before the
// server sees it (the row is not there) or after the server answered (the row IS committed,
// and the client got an error).
import {randomBytes} from 'node:crypto'
import {afterAll, describe, expect, it, vi} from 'vitest'
import {raw, sql, isCommit} from '../../dialects/index.js'
import type {Socket} from 'node:net'
import type {AckProtocol} from '../../src/chaos/proxy/acks.js'
import {cutSocket, FaultProxy, proxyFor} from '../../src/chaos/proxy/fault-proxy.js'
import {openDb, type Db} from '../../src/db/index.js'
import {targets} from '../helpers/targets.js'

const servers = await targets(['postgres', 'mysql'])
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

for (const target of servers) {
  describe.skipIf(!target.available)(`the fault proxy before ${target.dialect}`, () => {
    const table = `fproxy_${randomBytes(3).toString('hex')}`
    const opened: Db[] = []
    const proxies: FaultProxy[] = []
    let direct: Db

    /** A Db through a fresh proxy, one connection, quick to give up on connecting. */
    async function throughProxy(): Promise<{db: Db; proxy: FaultProxy}> {
      direct ??= await openDb(target.url)
      const t = raw(direct.dialect.render.quoteIdent(table))
      await direct.execute(sql`CREATE TABLE IF NOT EXISTS ${t} (id VARCHAR(64) NOT NULL PRIMARY KEY)`)
      const via = (await proxyFor(target.url, direct.dialect.wire!))!
      proxies.push(via.proxy)
      const db = await openDb(via.url, {poolSize: 1, connectTimeoutMs: 3000})
      opened.push(db)
      return {db, proxy: via.proxy}
    }
    const ref = () => raw(direct.dialect.render.quoteIdent(table))
    const rows = async (id: string) => (await direct.query(sql`SELECT id FROM ${ref()} WHERE id = ${id}`)).length
    const insertInTransaction = (db: Db, id: string) => db.transaction(async (tx) => void (await tx.execute(sql`INSERT INTO ${ref()} (id) VALUES (${id})`)))

    afterAll(async () => {
      await Promise.all(opened.map((db) => db.close().catch(() => {})))
      await Promise.all(proxies.map((p) => p.stop()))
      if (direct) {
        await direct.execute(sql`DROP TABLE IF EXISTS ${ref()}`)
        await direct.close()
      }
    })

    it('passes statements through in plain text, and reads them (TLS off on the proxied URL)', {timeout: 30_000}, async () => {
      const {db, proxy} = await throughProxy()
      await insertInTransaction(db, 'pass-1')
      expect(await rows('pass-1')).toBe(1)
      expect(proxy.stats).toMatchObject({opaque: 0, cuts: 0})
      expect(proxy.stats.connections).toBeGreaterThan(0)
    })

    it('a COMMIT whose answer never arrives: the client gets an error, the row IS committed', {timeout: 30_000}, async () => {
      const {db, proxy} = await throughProxy()
      proxy.cutAt({matches: isCommit, moment: 'after-answer'})
      await expect(insertInTransaction(db, 'unknown-1')).rejects.toThrow()
      expect(proxy.stats).toMatchObject({statementCuts: 1, cuts: 1})
      expect(await rows('unknown-1')).toBe(1)
      // the rule is spent: the pool's next connection commits as usual
      await insertInTransaction(db, 'unknown-2')
      expect(await rows('unknown-2')).toBe(1)
    })

    it('a COMMIT cut before the server sees it: the client gets an error, the row is not there', {timeout: 30_000}, async () => {
      const {db, proxy} = await throughProxy()
      proxy.cutAt({matches: isCommit, moment: 'before-server'})
      await expect(insertInTransaction(db, 'never-1')).rejects.toThrow()
      await proxy.statementCut()
      // the server rolls back once it sees the connection gone
      await expect.poll(() => rows('never-1'), {timeout: 5000}).toBe(0)
    })

    it('delays both directions and keeps the bytes in order', {timeout: 30_000}, async () => {
      const {db, proxy} = await throughProxy()
      proxy.setMode({kind: 'delay', ms: 100})
      const started = Date.now()
      const [row] = await db.query<{n: unknown}>(sql`SELECT 1 + 1 AS n`)
      expect(Number(row.n)).toBe(2)
      // one round trip is at least two delayed hops
      expect(Date.now() - started).toBeGreaterThanOrEqual(200)
    })

    it('a black hole never answers and never resets; cutAll then resets the connection', {timeout: 30_000}, async () => {
      const {db, proxy} = await throughProxy()
      await db.query(sql`SELECT 1`)
      proxy.setMode({kind: 'blackhole'})
      const outcome = db.query(sql`SELECT 2`).then(
        () => 'answered',
        () => 'failed',
      )
      expect(await Promise.race([outcome, sleep(500).then(() => 'hanging')])).toBe('hanging')
      proxy.cutAll()
      expect(await outcome).toBe('failed')
      proxy.setMode({kind: 'pass'})
      await db.query(sql`SELECT 3`)
    })
  })
}

// A cut of a connection whose end has begun: a TCP reset then fails (EINVAL) and Node leaves the
// socket's handle open for good, and the harness's process never exits after its verdict.
describe('the fault proxy cutting a connection whose end has begun', () => {
  it('closes the socket: nothing is left open', {timeout: 20_000}, async () => {
    const {createServer, connect} = await import('node:net')
    const tcpHandles = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length
    const server = createServer((s) => s.on('error', () => {}).resume())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const before = tcpHandles()
    const client = connect((server.address() as {port: number}).port, '127.0.0.1')
    const errors: string[] = []
    client.on('error', (e: NodeJS.ErrnoException) => errors.push(String(e.code)))
    await new Promise((r) => client.once('connect', r))
    client.write(Buffer.alloc(1 << 20))
    client.end() // its shutdown under way
    const closed = new Promise((r) => client.once('close', r))
    cutSocket(client)
    await Promise.race([closed, sleep(2000)])
    await sleep(200)
    expect(errors).toEqual([])
    expect(client.destroyed).toBe(true)
    // the server's side of the connection may take a moment to close
    for (let i = 0; i < 20 && tcpHandles() > before; i++) await sleep(100)
    await new Promise<void>((resolve) => server.close(() => resolve()))
    expect(tcpHandles()).toBeLessThanOrEqual(before)
  })
})

// Faults that last until they were hit: answers held until released; a client that gave up on
// a request a black hole swallowed; a black hole opened by a publish ack; a connection it held
// staying hung (plain TCP, an echo server behind the proxy: what a client sends is the answer).
describe('the fault proxy holding answers and seeing a client give up', () => {
  async function echoBehindProxy(acks?: AckProtocol) {
    const {createServer, connect} = await import('node:net')
    const accepted: Socket[] = []
    const server = createServer((s) => accepted.push(s.on('error', () => {}).pipe(s)))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const proxy = new FaultProxy({host: '127.0.0.1', port: (server.address() as {port: number}).port}, undefined, acks)
    const port = await proxy.start()
    const client = async () => {
      const socket = connect(port, '127.0.0.1')
      socket.on('error', () => {})
      await new Promise((r) => socket.once('connect', r))
      const received: string[] = []
      socket.setEncoding('utf8').on('data', (d: string) => received.push(d))
      return {socket, received}
    }
    const close = async () => {
      await proxy.stop()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
    return {proxy, client, close, accepted}
  }

  it('holds what delay would delay until releaseAnswers, however long, in order; then delays as before', {timeout: 20_000}, async () => {
    const {proxy, client, close} = await echoBehindProxy()
    proxy.setMode({kind: 'delay', ms: 20})
    proxy.holdAnswers()
    const {socket, received} = await client()
    socket.write('a')
    await sleep(100)
    socket.write('b')
    await sleep(400)
    expect(received.join('')).toBe('')
    expect(proxy.gatedSince).toBeGreaterThan(0)
    expect(proxy.inFlight).toBe(2)
    proxy.releaseAnswers()
    await vi.waitFor(() => expect(received.join('')).toBe('ab'))
    expect(proxy.gatedSince).toBe(0)
    socket.write('c')
    await vi.waitFor(() => expect(received.join('')).toBe('abc'))
    expect(proxy.inFlight).toBe(0)
    socket.destroy()
    await close()
  })

  it('counts a client that closed a connection whose request the black hole swallowed, not one the proxy cut', {timeout: 20_000}, async () => {
    const {proxy, client, close} = await echoBehindProxy()
    proxy.setMode({kind: 'blackhole'})
    const quiet = await client() // sends nothing: not a request given up on
    const gaveUp = await client()
    gaveUp.socket.write('hello?')
    await vi.waitFor(() => expect(proxy.stats.swallowed).toBe(1))
    const cut = await client()
    cut.socket.write('hello?')
    await vi.waitFor(() => expect(proxy.stats.swallowed).toBe(2))
    quiet.socket.destroy()
    gaveUp.socket.destroy()
    await vi.waitFor(() => expect(proxy.stats.abandoned).toBe(1))
    proxy.cutAll() // the third: cut by the proxy, not given up on
    await sleep(200)
    expect(proxy.stats.abandoned).toBe(1)
    expect(gaveUp.received).toEqual([])
    await close()
  })

  it('keeps a connection it black-holed hung after the hole closed, its server\'s end never reaching the client; new ones pass', {timeout: 20_000}, async () => {
    const {proxy, client, close, accepted} = await echoBehindProxy()
    const held = await client()
    let heldClosed = false
    held.socket.once('close', () => (heldClosed = true))
    proxy.setMode({kind: 'blackhole'})
    held.socket.write('lost')
    await vi.waitFor(() => expect(proxy.stats.swallowed).toBe(1))
    proxy.setMode({kind: 'pass'})
    const fresh = await client()
    fresh.socket.write('hello')
    await vi.waitFor(() => expect(fresh.received.join('')).toBe('hello'))
    held.socket.write('again')
    await vi.waitFor(() => expect(proxy.stats.swallowed).toBe(2))
    // the server ends it (a broker that missed the heartbeats): no FIN, no reset for the client
    accepted[0].destroy()
    await sleep(300)
    expect({heldClosed, received: held.received}).toEqual({heldClosed: false, received: []})
    held.socket.destroy()
    await vi.waitFor(() => expect(proxy.stats.abandoned).toBe(1))
    fresh.socket.destroy()
    await close()
  })

  it('says when a publish ack went to a client, in time to black-hole the client\'s next request', {timeout: 20_000}, async () => {
    const {proxy, client, close} = await echoBehindProxy('redis')
    let holed = false
    void proxy.acked().then(() => {
      proxy.setMode({kind: 'blackhole'})
      holed = true
    })
    const c = await client()
    c.socket.write('+OK\r\n') // no ack: passes
    await vi.waitFor(() => expect(c.received.join('')).toBe('+OK\r\n'))
    expect(holed).toBe(false)
    c.socket.write('$15\r\n1700000000000-0\r\n') // an XADD's answer: the ack itself goes through
    await vi.waitFor(() => expect(holed).toBe(true))
    expect({acks: proxy.stats.acks, received: c.received.join('')}).toEqual({acks: 1, received: '+OK\r\n$15\r\n1700000000000-0\r\n'})
    c.socket.write('next')
    await vi.waitFor(() => expect(proxy.stats.swallowed).toBe(1))
    await proxy.acked() // at once, once one went
    c.socket.destroy()
    await close()
  })
})
