// A pool client held across statements (Db.hold): several statements in one simple-protocol
// message, values inlined, so the transaction lease's claim and its mark + COMMIT are one round
// trip each.
import type {PoolClient, QueryResult} from 'pg'
import type {Sql} from '../index.js'
import type {HeldConnection} from '../../src/db/types.js'
import {inline} from '../sql.js'
import {literal} from './render.js'

export function heldConnection(client: PoolClient): HeldConnection {
  let released = false
  return {
    async script(statements: Sql[]) {
      const text = statements.map((s) => inline(s, literal)).join(';\n')
      const result = (await client.query(text)) as QueryResult | QueryResult[]
      return (Array.isArray(result) ? result : [result]).map((r) => ({rows: r.rows ?? [], affected: r.rowCount ?? 0}))
    },
    release(broken = false) {
      if (released) return
      released = true
      client.release(broken)
    },
  }
}
