// Whether a span would go anywhere: @opentelemetry/api installed AND a tracer provider
// registered. Many apps have the API as a dependency of a dependency and no SDK: then every
// span is a no-op, and building one per publish (each event's stored context parsed, links
// made) cost the relay about a tenth of a PostgreSQL drain (bench compare, relay / raw loop:
// 0.84x of the build before tracing with the API installed, 0.95x with it hidden; 5 rounds).
import {openTelemetry, type OpenTelemetryApi} from '../core/opentelemetry.js'

let unregistered: unknown

/** The API when spans are recorded somewhere; undefined without the package or a provider. */
export function activeTracing(): OpenTelemetryApi | undefined {
  const api = openTelemetry()
  if (!api) return undefined
  // the global provider is a proxy until an SDK registers: its delegate is then the no-op one.
  // An API without the proxy (a later major) counts as registered: spans as before.
  const Proxy = api.ProxyTracerProvider
  if (typeof Proxy !== 'function') return api
  unregistered ??= new Proxy().getDelegate()
  const provider = api.trace.getTracerProvider()
  return provider instanceof Proxy && provider.getDelegate() === unregistered ? undefined : api
}
