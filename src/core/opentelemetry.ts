// @opentelemetry/api, an optional peer: tracing is on when the app installed it (and registered
// an SDK), off when not. Looked for once per process and kept, so the producer's hot path pays
// one comparison per event, no await; without the package nothing is loaded and nothing changes.
import {requireIfInstalled} from './optional.js'

export type OpenTelemetryApi = typeof import('@opentelemetry/api')

let api: OpenTelemetryApi | null | undefined

/** The API module, or undefined when the app did not install it. */
export function openTelemetry(): OpenTelemetryApi | undefined {
  if (api === undefined) api = requireIfInstalled<OpenTelemetryApi>('@opentelemetry/api') ?? null
  return api ?? undefined
}
