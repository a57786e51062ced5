// The outbox's tables, column by column, in table order: the one list the three DDLs are
// rendered from (each dialect gives every column its type), the claims' column lists, init's
// shape check and the ops commands' reads. Imports nothing: dialects/ reads it too.

/**
 * The outbox table's columns (the archive has them too, then archived_at). `written`: the
 * producer's INSERT sets it, and replay copies it back from the archive. `claimed`: a claim
 * returns it, and publishers get it (src/schema/event-row.ts ClaimedEvent).
 */
export const EVENT_COLUMNS = [
  {name: 'id', meaning: 'the event id, a UUID (v7 unless the producer gave one), lower case', written: true, claimed: true},
  {name: 'event_type', meaning: "what happened, e.g. 'order.created'", written: true, claimed: true},
  {name: 'aggregate_type', meaning: 'the kind of entity it happened to, or NULL', written: true, claimed: true},
  {name: 'aggregate_id', meaning: 'the entity it happened to: --ordering aggregate keeps its events in order', written: true, claimed: true},
  {name: 'aggregate_version', meaning: "the entity's version, or NULL: consumers with checkVersion skip older ones", written: true, claimed: true},
  {name: 'payload', meaning: 'the event body, JSON', written: true, claimed: true},
  {name: 'headers', meaning: 'string headers (traceparent, ...) as a JSON object, or NULL', written: true, claimed: true},
  {name: 'created_at', meaning: 'the insert time by the database clock; claims go in (created_at, id) order', written: true, claimed: true},
  {name: 'published_at', meaning: 'when a relay marked it sent; NULL while it is not', written: false, claimed: false},
  {name: 'attempts', meaning: 'claims so far, the one in flight included', written: false, claimed: true},
  {name: 'lease_owner', meaning: 'the relay holding it, or NULL', written: false, claimed: false},
  {name: 'lease_until', meaning: "the lease's end, or the retry backoff's once handed back", written: false, claimed: false},
  {name: 'last_error', meaning: 'why the last attempt failed', written: false, claimed: false},
  {name: 'failed_at', meaning: 'when it was failed for good (max attempts), or NULL', written: false, claimed: false},
] as const

export type EventColumn = (typeof EVENT_COLUMNS)[number]['name']

/** every column of the outbox table, in table order */
export const EVENT_COLUMN_NAMES: readonly EventColumn[] = EVENT_COLUMNS.map((c) => c.name)

/** the columns the producer writes (and replay copies back), in table order */
export const WRITTEN_COLUMNS: readonly EventColumn[] = EVENT_COLUMNS.filter((c) => c.written).map((c) => c.name)

/** the columns a claim returns, in table order */
export const CLAIMED_COLUMNS: readonly EventColumn[] = EVENT_COLUMNS.filter((c) => c.claimed).map((c) => c.name)

/** the archive's own column, after the event's */
export const ARCHIVED_AT = {name: 'archived_at', meaning: 'when archive moved it out of the outbox'} as const

/** every column of the archive table, in table order */
export const ARCHIVE_COLUMN_NAMES: readonly string[] = [...EVENT_COLUMN_NAMES, ARCHIVED_AT.name]

/** The inbox table's columns: one row per event a consumer has handled. */
export const INBOX_COLUMNS = [
  {name: 'consumer', meaning: "the consumer's name; with event_id, the primary key"},
  {name: 'event_id', meaning: 'the event handled'},
  {name: 'aggregate_type', meaning: "the event's aggregate_type"},
  {name: 'aggregate_id', meaning: "the event's aggregate_id"},
  {name: 'aggregate_version', meaning: "the event's aggregate_version: checkVersion reads the highest"},
  {name: 'processed_at', meaning: 'when the consumer handled it'},
] as const

export type InboxColumn = (typeof INBOX_COLUMNS)[number]['name']

/** every column of the inbox table, in table order */
export const INBOX_COLUMN_NAMES: readonly InboxColumn[] = INBOX_COLUMNS.map((c) => c.name)
