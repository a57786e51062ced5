// EventsPart: what producers and consumers write. The outbox row, and the inbox row that
// deduplicates.
import type {TableNames} from './dialect.js'
import type {Sql} from './sql.js'

export interface NewEventRow {
  id: string
  eventType: string
  aggregateType: string | null
  aggregateId: string
  aggregateVersion: number | null
  payload: string
  headers: string | null
}

export interface InboxRow {
  consumer: string
  eventId: string
  aggregateType: string | null
  aggregateId: string | null
  aggregateVersion: number | null
}

/** The statements around one delivery inside a consumer's batch transaction. */
export interface SavepointSql {
  /** marks the point a failed delivery rolls back to */
  open(name: string): Sql
  /** the delivery went through: forget the mark, keep its changes (they commit with the batch) */
  release(name: string): Sql
  /** the delivery failed: undo its changes since the mark (the mark itself stays; release it after) */
  rollbackTo(name: string): Sql
}

export interface EventsPart {
  /** the producer's INSERT: created_at by the database clock at the insert itself */
  insertEvent(names: TableNames, row: NewEventRow): Sql
  /**
   * record (consumer, event id) in the inbox. When it was there already: 0 rows changed, or a
   * unique-key error (ErrorsPart.isDuplicateKey) where the transaction goes on after one (MySQL)
   */
  inboxInsert(names: TableNames, row: InboxRow): Sql
  /**
   * record a consumer batch's deliveries in one statement. Where `inboxReturnedId` is given,
   * rows already there (or twice in `rows`) are skipped and the statement returns the event_id
   * of each row it inserted; where not (MySQL: no RETURNING), a row already there raises a
   * unique-key error and none of the rows stays (the transaction goes on)
   */
  inboxInsertMany(names: TableNames, rows: readonly InboxRow[]): Sql
  /**
   * given where inboxInsertMany returns the ids it inserted: the event_id it returns for an id
   * sent (PostgreSQL's uuid comes back in lower case; text comes back as sent)
   */
  readonly inboxReturnedId?: (sent: string) => string
  /** highest aggregate_version this consumer has applied for the aggregate (column max_version) */
  inboxMaxVersion(names: TableNames, consumer: string, aggregateType: string | null, aggregateId: string): Sql
  /**
   * a consumer's batch: one transaction for several deliveries, a savepoint around each one's
   * inbox row and effect, so a handler's error undoes that delivery alone
   */
  readonly savepoint: SavepointSql
  /** the most bytes of JSON text the payload column can hold here (the producer's own default is lower) */
  readonly maxPayloadBytes: number
}
