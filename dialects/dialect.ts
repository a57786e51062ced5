// The Dialect: everything that differs between databases, and nothing else, as named parts.
// Each part's contract is in its own file beside this one (render.ts, ddl.ts, ...), and each
// dialect's folder has one file per part (postgres/render.ts, postgres/ddl.ts, ...).
import type {BatchesPart} from './batches.js'
import type {DdlPart} from './ddl.js'
import type {DriverPart} from './driver.js'
import type {ErrorsPart} from './errors.js'
import type {EventsPart} from './events.js'
import type {NamedLock} from './lock.js'
import type {RelayPart} from './relay.js'
import type {RenderPart} from './render.js'
import type {VerifyPart} from './verify.js'
import type {WirePart} from './wire.js'

export type {BatchesPart, SummaryWanted} from './batches.js'
export type * from './ddl.js'
export type {AppExecutor, DriverPart, DriverResult, DriverSession, RunSql} from './driver.js'
export type {DbErrorKind, ErrorsPart} from './errors.js'
export type * from './events.js'
export type * from './lock.js'
export type * from './partitions.js'
export type * from './relay.js'
export type {DetachWay, RetentionPart, RetireMode} from './retention.js'
export type * from './render.js'
export type * from './verify.js'
export type {WirePart, WireReader, WireTarget} from './wire.js'

export type DialectName = 'postgres' | 'mysql' | 'sqlite'

/** Already-validated, unquoted identifiers. */
export interface TableNames {
  schema?: string
  outbox: string
  inbox: string
  archive: string
}

export interface Dialect {
  readonly name: DialectName
  /** the database's name as messages write it (PostgreSQL, MySQL/MariaDB, SQLite) */
  readonly displayName: string
  /** Connecting, and recognising the driver's own clients and pools (writeEvent, Consumer). */
  readonly driver: DriverPart
  /** Writing SQL text for this database: quoting, literals, placeholders and its clock. */
  readonly render: RenderPart
  /** The tables and indexes `outbox init` creates, and how to see which exist. */
  readonly ddl: DdlPart
  /** The relay's statements: claim a batch under a lease, mark it published, retry or fail one event, give leases back. */
  readonly relay: RelayPart
  /** What producers and consumers write: the outbox row, and the inbox row that deduplicates. */
  readonly events: EventsPart
  /** what `outbox status`, `failed`, `replay` and `archive` need of the database (dialects/batches.ts) */
  readonly batches: BatchesPart
  /** What `outbox verify` asks of a live server (src/verify/). */
  readonly verify: VerifyPart
  /** Driver errors the code must tell apart, by their meaning rather than their codes. */
  readonly errors: ErrorsPart
  /**
   * A lock by name held to the end of a transaction (dialects/lock.ts). PostgreSQL: a
   * transaction-level advisory lock; MySQL: GET_LOCK, a session lock given back after the
   * commit. Undefined on SQLite: its writers take turns already (BEGIN IMMEDIATE).
   */
  readonly namedLock?: NamedLock
  /**
   * The server's protocol as a fault proxy reads it (dialects/wire.ts): outbox chaos cuts a
   * connection right after its COMMIT. Undefined on SQLite: no server, no wire.
   */
  readonly wire?: WirePart
}
