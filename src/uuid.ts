// UUID v7 (RFC 9562): 48-bit Unix milliseconds, then random bits. Time-ordered, so new ids
// land at the right edge of the primary key index instead of at random pages.
import {randomFillSync} from 'node:crypto'

const pool = Buffer.alloc(16 * 256)
let offset = pool.length

export function uuidv7(now = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool)
    offset = 0
  }
  const b = pool.subarray(offset, offset + 16)
  offset += 16
  b.writeUIntBE(now, 0, 6)
  b[6] = (b[6] & 0x0f) | 0x70
  b[8] = (b[8] & 0x3f) | 0x80
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(value: string): boolean {
  return UUID.test(value)
}

/**
 * An id as written, in lower and in upper case, to look it up: writeEvent stores ids lower
 * case, as PostgreSQL's uuid type prints them; rows written before it did keep the case they
 * were given, which MySQL's ascii_bin and SQLite's TEXT compare.
 */
export function idForms(ids: string[]): string[] {
  return [...new Set(ids.flatMap((id) => [id, id.toLowerCase(), id.toUpperCase()]))]
}
