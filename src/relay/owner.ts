import {randomBytes} from 'node:crypto'
import {hostname} from 'node:os'

/** host:pid:random — unique per relay instance, readable in lease_owner. */
export function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
}
