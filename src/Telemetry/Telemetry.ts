import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../Config.js"

/**
 * OpenTelemetry export over OTLP/HTTP (JSON) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: spans
 * within `OTEL_BSP_SCHEDULE_DELAY`, metrics every `OTEL_METRIC_EXPORT_INTERVAL`, both flushed at
 * shutdown. Unset, it is an empty layer: no tracer, no exporter, nothing on the request path.
 * Layers built on top of it (the server, the background work) inherit its tracer.
 */
export const TelemetryLive = Layer.unwrapEffect(Effect.map(AppConfig, (config) => {
  const telemetry = config.telemetry
  if (telemetry === undefined) return Layer.empty
  const resource = { serviceName: telemetry.serviceName }
  const headers = Redacted.value(telemetry.headers)
  return Layer.mergeAll(
    OtlpTracer.layer({
      url: `${telemetry.endpoint}/v1/traces`,
      resource,
      headers,
      exportInterval: telemetry.spanExportDelay
    }),
    OtlpMetrics.layer({
      url: `${telemetry.endpoint}/v1/metrics`,
      resource,
      headers,
      exportInterval: telemetry.metricExportInterval
    })
  ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))
}))

/** Whether spans are exported: without an exporter, building them is pure cost. */
export const tracingEnabled = Effect.map(AppConfig, (config) => config.telemetry !== undefined)
