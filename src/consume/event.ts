// An event as a consumer receives it, whichever broker carried it: what `decode*` returns,
// what a runtime hands to the handler, and what `Consumer.handle` dedupes on (it reads the id
// and the aggregate fields only).

export interface ConsumedEvent {
  /** the outbox row's id (a UUID v7 unless the producer chose one): the dedupe key */
  id: string
  eventType: string
  aggregateType: string | null
  aggregateId: string
  aggregateVersion: number | null
  /** the payload, parsed from the JSON the producer wrote */
  payload: unknown
  /** the event's own headers as the producer wrote them (traceparent, ...); {} when none */
  headers: Record<string, string>
  /** when the producer wrote the event (outbox created_at) */
  createdAt: Date
}

/** A message that does not carry an outbox event: it can never be handled, so it is dead-lettered at once. */
export class MessageDecodeError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'MessageDecodeError'
  }
}

/** decode()'s event, or why the message carries none (the loop dead-letters it at once). */
export function decodeOrReason(decode: () => ConsumedEvent): ConsumedEvent | MessageDecodeError {
  try {
    return decode()
  } catch (error) {
    return error instanceof MessageDecodeError ? error : new MessageDecodeError(String((error as Error)?.message ?? error))
  }
}

/** Reads the fields every transport carries, refusing a message that lacks one. */
export class FieldReader {
  constructor(
    private readonly where: string,
    private readonly get: (name: string) => string | undefined,
  ) {}

  required(name: string): string {
    const value = this.get(name)
    if (value === undefined || value === '') throw new MessageDecodeError(`${this.where}: no ${name}`)
    return value
  }

  optional(name: string): string | null {
    const value = this.get(name)
    return value === undefined ? null : value
  }

  version(name: string): number | null {
    const text = this.optional(name)
    if (text === null || text === '') return null
    const version = Number(text)
    if (!Number.isSafeInteger(version)) throw new MessageDecodeError(`${this.where}: ${name} ${JSON.stringify(text)} is not an integer`)
    return version
  }

  time(name: string): Date {
    const text = this.required(name)
    const time = new Date(text)
    if (Number.isNaN(time.getTime())) throw new MessageDecodeError(`${this.where}: ${name} ${JSON.stringify(text)} is not a time`)
    return time
  }
}

/** The payload from its JSON text. */
export function parsePayload(text: string, where: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new MessageDecodeError(`${where}: the body is not JSON`)
  }
}
