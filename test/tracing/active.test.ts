// Spans are built only when they go somewhere: with @opentelemetry/api installed but no SDK
// registered (the API as a dependency of a dependency), the relay and the consumer make none.
import {trace} from '@opentelemetry/api'
import {BasicTracerProvider} from '@opentelemetry/sdk-trace-base'
import {afterAll, describe, expect, it} from 'vitest'
import type {Publisher} from '../../src/publishers/types.js'
import type {ClaimedEvent} from '../../src/schema/event-row.js'
import {activeTracing} from '../../src/tracing/active.js'
import {inProcessSpan} from '../../src/tracing/process-span.js'
import {startPublishSpan} from '../../src/tracing/publish-span.js'

const publisher: Publisher = {name: 'stdout', publish: async (events) => events.map(() => ({ok: true})), close: async () => {}}
const event = {id: '0190f5e4-6c1a-7b9e-8d2f-3a4b5c6d7e8f', eventType: 'order.created', aggregateId: 'o-1', headers: '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'} as unknown as ClaimedEvent

describe('tracing only where a provider is registered', () => {
  afterAll(() => trace.disable())

  it('no provider: no span is built, the work still runs; a registered one: spans', async () => {
    trace.disable()
    expect(activeTracing()).toBeUndefined()
    expect(startPublishSpan(publisher, [event])).toBeUndefined()
    expect(await inProcessSpan({id: event.id}, 'c', undefined, async () => 'applied' as const)).toBe('applied')

    trace.setGlobalTracerProvider(new BasicTracerProvider())
    expect(activeTracing()).toBeDefined()
    const span = startPublishSpan(publisher, [event])
    expect(span).toBeDefined()
    span!.end([{ok: true}])
  })
})
