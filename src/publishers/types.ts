// The one small interface every broker adapter implements.
import type {ClaimedEvent} from '../schema/event-row.js'

export type PublishResult =
  | {ok: true}
  /**
   * retryable: backoff, then try again (broker down, 429/5xx, timeout). `unreachable`: no
   * connection to the broker at all; a batch where every event says so (or the publisher
   * threw) is an outage, and the relay gives its attempts back instead of using them up.
   */
  | {ok: false; error: string; permanent?: false; unreachable?: boolean}
  /** permanent: fail the event now (e.g. HTTP 4xx), with the response recorded */
  | {ok: false; error: string; permanent: true}

/** Where a publisher sends an event, as the relay's span names it (OpenTelemetry messaging conventions). */
export interface MessagingTarget {
  /** messaging.system, e.g. rabbitmq, nats, redis */
  readonly system: string
  /** messaging.destination.name of one event: the exchange, subject, stream or URL it goes to */
  destination(event: ClaimedEvent): string
}

export interface Publisher {
  readonly name: string
  /** for the relay's PRODUCER span; without it the span names the publisher as the system */
  readonly messaging?: MessagingTarget
  /**
   * Sends a batch, oldest first; one result per event, in the same order. Must only report
   * ok for events the broker acknowledged. A failure of one event must not stop the rest.
   */
  publish(events: readonly ClaimedEvent[]): Promise<PublishResult[]>
  close(): Promise<void>
}
