import { Effect, Layer } from "effect"
import { AppConfig } from "../Config.js"

/**
 * The export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. Unset, it is an empty layer: no tracer,
 * no exporter, nothing on the request path, and the exporter's modules (src/Telemetry/Otlp.ts)
 * are never loaded. Layers built on top of it (the server, the background work) inherit its tracer.
 */
export const TelemetryLive = Layer.unwrapEffect(Effect.flatMap(AppConfig, (config) => {
  const telemetry = config.telemetry
  return telemetry === undefined
    ? Effect.succeed(Layer.empty)
    : Effect.map(Effect.promise(() => import("./Otlp.js")), (otlp) => otlp.telemetryLayer(telemetry))
}))

/**
 * Whether requests are traced and measured: with an exporter, or with the Prometheus listener
 * (which reads a request's route template from its span). Otherwise building spans is pure cost.
 */
export const tracingEnabled = Effect.map(AppConfig, (config) => config.telemetry !== undefined || config.metrics !== undefined)
