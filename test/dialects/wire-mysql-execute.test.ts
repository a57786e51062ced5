// mysql2's execute() sends every statement as COM_STMT_PREPARE then COM_STMT_EXECUTE, COMMIT
// included: the fault proxy's MySQL reader (dialects/mysql/wire.ts) must see that COMMIT too,
// so chaos's commit-unknown cuts an app that commits through execute() as well as query().
import {randomBytes} from 'node:crypto'
import {afterAll, describe, expect, it} from 'vitest'
import {isCommit} from '../../dialects/index.js'
import {wire} from '../../dialects/mysql/wire.js'
import {proxyFor, type FaultProxy} from '../../src/chaos/proxy/fault-proxy.js'
import {targets} from '../helpers/targets.js'

const [target] = await targets(['mysql'])

describe.skipIf(!target.available)('COMMIT by execute() through the fault proxy on MariaDB', () => {
  const table = `wire_exec_${randomBytes(3).toString('hex')}`
  const proxies: FaultProxy[] = []
  const connect = async (url: string) => (await import('mysql2/promise')).createConnection({uri: url, connectTimeout: 3000})

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop()))
    const direct = await connect(target.url)
    await direct.query(`DROP TABLE IF EXISTS ${table}`)
    await direct.end()
  })

  it.each(['after-answer', 'before-server'] as const)('cuts %s an executed COMMIT: the client gets an error; the row is there only if the server ran it', {timeout: 30_000}, async (moment) => {
    const direct = await connect(target.url)
    await direct.query(`CREATE TABLE IF NOT EXISTS ${table} (id VARCHAR(64) NOT NULL PRIMARY KEY)`)
    const via = (await proxyFor(target.url, wire))!
    proxies.push(via.proxy)
    via.proxy.cutAt({matches: isCommit, moment})
    // ssl-mode=DISABLED is the CLI's spelling; a plain mysql2 connection has TLS off already
    const client = await connect(via.url.replace(/\?.*$/, ''))
    client.on('error', () => {})
    const id = `${moment}-${randomBytes(3).toString('hex')}`
    try {
      await client.execute('START TRANSACTION')
      await client.execute(`INSERT INTO ${table} (id) VALUES (?)`, [id])
      // nothing before the COMMIT was taken for it: the INSERT's execute went through
      expect(via.proxy.stats.statementCuts).toBe(0)
      await expect(client.execute('COMMIT')).rejects.toThrow()
      expect(via.proxy.stats).toMatchObject({statementCuts: 1, opaque: 0})
      const [rows] = await direct.query(`SELECT id FROM ${table} WHERE id = ?`, [id])
      expect((rows as unknown[]).length).toBe(moment === 'after-answer' ? 1 : 0)
    } finally {
      client.destroy()
      await direct.end()
    }
  })
})
