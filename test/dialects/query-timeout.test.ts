// OpenOptions.queryTimeoutMs: a server that stops answering without a reset (the fault proxy's
// black hole) fails the statement on the client's side instead of hanging it, on every path
// (a statement, a prepared one, a transaction, Kysely), and the connection that hung is not
// pooled again: once the network is back, the next statement succeeds on a fresh one.
// Without the bound each of these awaits would wait forever (the test's timeout).
import {afterAll, describe, expect, it} from 'vitest'
import {sql} from '../../dialects/index.js'
import {proxyFor, type FaultProxy} from '../../src/chaos/proxy/fault-proxy.js'
import {openDb, type Db} from '../../src/db/index.js'
import {targets} from '../helpers/targets.js'

const servers = await targets(['postgres', 'mysql'])

for (const target of servers) {
  describe.skipIf(!target.available)(`queryTimeoutMs on ${target.dialect}`, () => {
    const opened: Db[] = []
    const proxies: FaultProxy[] = []
    afterAll(async () => {
      await Promise.all(opened.map((db) => db.close().catch(() => {})))
      await Promise.all(proxies.map((p) => p.stop()))
    })

    it('a black-holed statement rejects; the pool gets a working connection once the network is back', {timeout: 30_000}, async () => {
      const probe = await openDb(target.url, {poolSize: 1})
      const via = (await proxyFor(target.url, probe.dialect.wire!))!
      await probe.close()
      proxies.push(via.proxy)
      const db = await openDb(via.url, {poolSize: 1, queryTimeoutMs: 300, connectTimeoutMs: 3000})
      opened.push(db)
      const kysely = await db.kysely()
      const one = sql`SELECT 1 AS n`
      expect(await db.query(one)).toHaveLength(1)

      via.proxy.setMode({kind: 'blackhole'})
      await expect(db.query(one)).rejects.toThrow(/timeout/i)
      // a fresh connection's handshake is swallowed too: bounded by the connect timeout
      await expect(db.query(one, {prepare: true})).rejects.toThrow()
      await expect(db.transaction((tx) => tx.query(one))).rejects.toThrow()
      expect(via.proxy.stats.swallowed).toBeGreaterThan(0)

      via.proxy.setMode({kind: 'pass'})
      via.proxy.cutAll() // connections still open hold swallowed bytes: gone, as after a real outage
      expect(await db.query(one, {prepare: true})).toHaveLength(1)
      expect(await db.transaction((tx) => tx.query(one))).toHaveLength(1)
      expect((await kysely.selectNoFrom((eb) => eb.lit(1).as('n')).execute()).length).toBe(1)

      // Kysely's own statements are bounded too (its connection from the same pool)
      via.proxy.setMode({kind: 'blackhole'})
      await expect(kysely.selectNoFrom((eb) => eb.lit(1).as('n')).execute()).rejects.toThrow(/timeout/i)
      via.proxy.setMode({kind: 'pass'})
      via.proxy.cutAll()
      expect(await db.query(one)).toHaveLength(1)
    })
  })
}
