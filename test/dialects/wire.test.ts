// The wire parts' frame readers (dialects/*/wire.ts) on hand-made frames: the statements a
// client runs, found in any chunking, and the stream given up as opaque where TLS begins.
import {describe, expect, it} from 'vitest'
import {isCommit} from '../../dialects/index.js'
import {wire as mysqlWire} from '../../dialects/mysql/wire.js'
import {wire as postgresWire} from '../../dialects/postgres/wire.js'
import type {WireReader} from '../../dialects/wire.js'

const int32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}
const cstr = (s: string) => Buffer.from(s + '\0')

/** PostgreSQL: a typed message (type byte, int32 length counting itself, body). */
const pgMessage = (type: string, ...body: Buffer[]) => {
  const payload = Buffer.concat(body)
  return Buffer.concat([Buffer.from(type), int32(payload.length + 4), payload])
}
const pgStartup = (code: number, ...body: Buffer[]) => {
  const payload = Buffer.concat([int32(code), ...body])
  return Buffer.concat([int32(payload.length + 4), payload])
}
const STARTUP = pgStartup(196608, cstr('user'), cstr('postgres'), cstr('database'), cstr('test'), Buffer.from([0]))
const SSL_REQUEST = pgStartup(80877103)

/** MySQL: a packet (3-byte length, sequence, payload). */
const myPacket = (sequence: number, payload: Buffer) => {
  const head = Buffer.alloc(4)
  head.writeUIntLE(payload.length, 0, 3)
  head[3] = sequence
  return Buffer.concat([head, payload])
}
const capabilities = (flags: number) => {
  const b = Buffer.alloc(32)
  b.writeUInt32LE(flags)
  return b
}
const HANDSHAKE = myPacket(1, Buffer.concat([capabilities(0x000fa685 & ~0x0800), cstr('root'), Buffer.from([0])]))
const myQuery = (sql: string) => myPacket(0, Buffer.concat([Buffer.from([0x03]), Buffer.from(sql)]))

/** Feeds the bytes one at a time (the worst chunking) and in one piece: both give the same statements. */
function statements(make: () => WireReader, bytes: Buffer, server?: {after: number; bytes: Buffer}): {one: string[]; split: string[]; opaque: boolean} {
  const feed = (chunks: Buffer[]) => {
    const reader = make()
    const out: string[] = []
    let fed = 0
    for (const c of chunks) {
      out.push(...reader.fromClient(c))
      fed += c.length
      if (server && fed === server.after) reader.fromServer(server.bytes)
    }
    return {out, opaque: reader.opaque}
  }
  const cut = server?.after ?? bytes.length
  const one = feed([bytes.subarray(0, cut), bytes.subarray(cut)].filter((b) => b.length))
  const split = feed([...bytes].map((b) => Buffer.from([b])))
  expect(split.opaque).toBe(one.opaque)
  return {one: one.out, split: split.out, opaque: one.opaque}
}

describe('isCommit', () => {
  it('is COMMIT alone, in any case, with WORK or TRANSACTION or a semicolon; nothing else', () => {
    for (const yes of ['COMMIT', 'commit', ' Commit ;', 'COMMIT WORK', 'commit transaction;']) expect(isCommit(yes), yes).toBe(true)
    for (const no of ['ROLLBACK', 'COMMITTED', 'SELECT 1; COMMIT', "INSERT INTO t VALUES ('COMMIT')", 'commit and chain x']) expect(isCommit(no), no).toBe(false)
  })
})

describe('PostgreSQL frames', () => {
  const reader = () => postgresWire.reader()

  it('finds simple queries after the startup message', () => {
    const bytes = Buffer.concat([STARTUP, pgMessage('Q', cstr('BEGIN')), pgMessage('Q', cstr('INSERT INTO t VALUES (1)')), pgMessage('Q', cstr('COMMIT'))])
    const {one, split, opaque} = statements(reader, bytes)
    expect(one).toEqual(['BEGIN', 'INSERT INTO t VALUES (1)', 'COMMIT'])
    expect(split).toEqual(one)
    expect(opaque).toBe(false)
  })

  it('names an extended-protocol statement when it is executed: Parse, Bind, Execute, for the unnamed and a named statement', () => {
    const parse = (name: string, sql: string) => pgMessage('P', cstr(name), cstr(sql), Buffer.from([0, 0]))
    const bind = (portal: string, statement: string) => pgMessage('B', cstr(portal), cstr(statement), Buffer.alloc(6))
    const execute = (portal: string) => pgMessage('E', cstr(portal), int32(0))
    const sync = pgMessage('S')
    const bytes = Buffer.concat([
      STARTUP,
      parse('', 'SELECT $1'), bind('', ''), pgMessage('D', Buffer.from('P'), cstr('')), execute(''), sync,
      parse('s1', 'commit'), sync,
      bind('p', 's1'), execute('p'), sync,
    ])
    const {one, split} = statements(reader, bytes)
    expect(one).toEqual(['SELECT $1', 'commit'])
    expect(split).toEqual(one)
  })

  it('follows an SSLRequest the server refused (N), and gives up on one it accepted (S)', () => {
    const refused = statements(reader, Buffer.concat([SSL_REQUEST, STARTUP, pgMessage('Q', cstr('COMMIT'))]), {after: SSL_REQUEST.length, bytes: Buffer.from('N')})
    expect(refused).toMatchObject({one: ['COMMIT'], split: ['COMMIT'], opaque: false})
    // what follows an S is a TLS handshake: never read as messages
    const tls = statements(reader, Buffer.concat([SSL_REQUEST, pgMessage('Q', cstr('COMMIT'))]), {after: SSL_REQUEST.length, bytes: Buffer.from('S')})
    expect(tls).toMatchObject({one: [], split: [], opaque: true})
  })
})

describe('MySQL frames', () => {
  const reader = () => mysqlWire.reader()

  it('finds COM_QUERY statements after the handshake response; authentication packets are not commands', () => {
    const authMore = myPacket(3, Buffer.concat([Buffer.from([0x03]), Buffer.from('COMMIT')]))
    const ping = myPacket(0, Buffer.from([0x0e]))
    const bytes = Buffer.concat([HANDSHAKE, authMore, myQuery('START TRANSACTION'), ping, myQuery('INSERT INTO t VALUES (1)'), myQuery('COMMIT')])
    const {one, split, opaque} = statements(reader, bytes)
    expect(one).toEqual(['START TRANSACTION', 'INSERT INTO t VALUES (1)', 'COMMIT'])
    expect(split).toEqual(one)
    expect(opaque).toBe(false)
  })

  it('names a prepared statement when it is executed (COM_STMT_PREPARE, the id from the server\'s PREPARE_OK, COM_STMT_EXECUTE); a closed id and a failed prepare name nothing', () => {
    const prepare = (sql: string) => myPacket(0, Buffer.concat([Buffer.from([0x16]), Buffer.from(sql)]))
    const stmt = (code: number, id: number, rest = Buffer.alloc(0)) => {
      const b = Buffer.alloc(5)
      b[0] = code
      b.writeUInt32LE(id, 1)
      return myPacket(0, Buffer.concat([b, rest]))
    }
    const execute = (id: number) => stmt(0x17, id, Buffer.from([0, 1, 0, 0, 0]))
    const prepareOk = (id: number) => {
      const b = Buffer.alloc(12)
      b.writeUInt32LE(id, 1)
      return myPacket(1, b)
    }
    const head = Buffer.concat([HANDSHAKE, myQuery('START TRANSACTION'), prepare('COMMIT')])
    const tail = Buffer.concat([execute(7), execute(9), stmt(0x19, 7), execute(7), myQuery('SELECT 1')])
    const {one, split} = statements(reader, Buffer.concat([head, tail]), {after: head.length, bytes: prepareOk(7)})
    expect(one).toEqual(['START TRANSACTION', 'COMMIT', 'SELECT 1'])
    expect(split).toEqual(one)
    // the server refused the prepare (an error packet): its text is never named
    const error = myPacket(1, Buffer.concat([Buffer.from([0xff, 0x28, 0x04]), Buffer.from('#42000syntax')]))
    const refused = statements(reader, Buffer.concat([head, execute(0)]), {after: head.length, bytes: error})
    expect(refused.one).toEqual(['START TRANSACTION'])
  })

  it('gives up after an SSL request (CLIENT_SSL and the fixed part only)', () => {
    const sslRequest = myPacket(1, capabilities(0x000fa685 | 0x0800))
    expect(statements(reader, Buffer.concat([sslRequest, myQuery('COMMIT')]))).toMatchObject({one: [], split: [], opaque: true})
  })
})

describe('URLs through a proxy', () => {
  it('aims at 127.0.0.1:port with TLS off, and knows the server it replaces; a socket has no TCP target', () => {
    expect(postgresWire.target('postgres://u:p@db.example:6543/app?sslmode=require')).toEqual({host: 'db.example', port: 6543})
    expect(postgresWire.target('postgres://u@localhost/app')).toEqual({host: 'localhost', port: 5432})
    expect(postgresWire.target('postgres://u@/app?host=/var/run/postgresql')).toBeUndefined()
    expect(postgresWire.viaProxy('postgres://u:p@db.example:6543/app?sslmode=require&application_name=x', 7000)).toBe('postgres://u:p@127.0.0.1:7000/app?application_name=x&sslmode=disable')
    expect(mysqlWire.target('mysql://root@db.example/app')).toEqual({host: 'db.example', port: 3306})
    expect(mysqlWire.target('mysql://root@%2Ftmp%2Fmysql.sock/app')).toBeUndefined()
    expect(mysqlWire.viaProxy('mysql://root:pw@db.example:3307/app?ssl-mode=REQUIRED', 7001)).toBe('mysql://root:pw@127.0.0.1:7001/app?ssl-mode=DISABLED')
  })
})
