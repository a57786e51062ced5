// A database login of a test's own, so killing "that command's connections" (pg_terminate_backend,
// KILL) cannot touch other test files running on the same server.
import {randomBytes} from 'node:crypto'
import {raw, sql} from '../../dialects/index.js'
import type {Db} from '../../src/db/index.js'

export interface DedicatedLogin {
  url: string
  user: string
  /** terminates every session of this login; returns how many there were */
  kill: () => Promise<number>
  /** sessions of this login waiting on a lock */
  blocked: () => Promise<number>
  drop: () => Promise<void>
}

export async function dedicatedLogin(admin: Db, baseUrl: string, prefix = 'relay_fault'): Promise<DedicatedLogin> {
  const user = `${prefix}_${randomBytes(3).toString('hex')}`
  const u = new URL(baseUrl)
  if (admin.dialect.name === 'postgres') {
    await admin.execute(sql`${raw(`CREATE ROLE ${user} LOGIN SUPERUSER`)}`)
    u.username = user
    return {
      url: u.toString(),
      user,
      kill: async () => (await admin.query(sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ${user}`)).length,
      blocked: async () => (await admin.query(sql`SELECT pid FROM pg_stat_activity WHERE usename = ${user} AND wait_event_type = 'Lock'`)).length,
      drop: async () => {
        await admin.execute(sql`${raw(`DROP OWNED BY ${user}`)}`).catch(() => {}) // grants a test gave it
        await admin.execute(sql`${raw(`DROP ROLE IF EXISTS ${user}`)}`)
      },
    }
  }
  await admin.execute(sql`${raw(`CREATE USER '${user}'@'%' IDENTIFIED BY 'pw-${user}'`)}`)
  await admin.execute(sql`${raw(`CREATE USER '${user}'@'localhost' IDENTIFIED BY 'pw-${user}'`)}`)
  for (const host of ['%', 'localhost']) await admin.execute(sql`${raw(`GRANT ALL ON ${u.pathname.slice(1)}.* TO '${user}'@'${host}'`)}`)
  u.username = user
  u.password = `pw-${user}`
  return {
    url: u.toString(),
    user,
    kill: async () => {
      const ids = await admin.query<{id: number}>(sql`SELECT id FROM information_schema.processlist WHERE user = ${user}`)
      for (const {id} of ids) await admin.execute(sql`${raw(`KILL ${Number(id)}`)}`).catch(() => {})
      return ids.length
    },
    blocked: async () => (await admin.query(sql`SELECT id FROM information_schema.processlist WHERE user = ${user} AND state LIKE 'Waiting for table%'`)).length,
    drop: async () => {
      for (const host of ['%', 'localhost']) await admin.execute(sql`${raw(`DROP USER IF EXISTS '${user}'@'${host}'`)}`)
    },
  }
}
