// UUID v7 (RFC 9562): 48-bit Unix milliseconds, then random bits. Time-ordered, so new ids
// land at the right edge of the primary key index instead of at random pages.
import {randomFillSync} from 'node:crypto'

const pool = Buffer.alloc(16 * 256)
let offset = pool.length
let lastMs = -1
let sequence = 0

/**
 * Monotonic within this process (RFC 9562, 6.2 method 1): ids made in the same millisecond
 * take a 12-bit counter in rand_a, started at a random value below 2048 each new millisecond,
 * so an id made after another sorts after it. Two events an aggregate writes within one
 * millisecond (one transaction, say) then keep their order where created_at ties (SQLite
 * stores milliseconds) and the claim falls back to the id. A clock that steps back keeps the
 * last millisecond; a counter that runs out moves on to the next one.
 */
export function uuidv7(now = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool)
    offset = 0
  }
  const b = pool.subarray(offset, offset + 16)
  offset += 16
  if (now > lastMs) {
    lastMs = now
    sequence = ((b[6] << 8) | b[7]) & 0x7ff
  } else if (++sequence > 0xfff) {
    lastMs++
    sequence = 0
  }
  b.writeUIntBE(lastMs, 0, 6)
  b[6] = 0x70 | (sequence >> 8)
  b[7] = sequence & 0xff
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
