import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient, HttpBody } from "@effect/platform"
import { Layer, Option, Redacted, Schema } from "effect"
import type { TelemetrySettings } from "../Config.js"
import { BoundedExport, spansIn } from "./BoundedExport.js"

const TracesPayload = Schema.Struct({
  resourceSpans: Schema.Array(Schema.Struct({
    scopeSpans: Schema.Array(Schema.Struct({ spans: Schema.Array(Schema.Unknown) }))
  }))
})
const decodeTraces = Schema.decodeUnknownOption(TracesPayload)

/** OTLP/HTTP JSON, remembering how many spans each trace export carries (to count them if it is dropped). */
const serialization = Layer.succeed(OtlpSerialization.OtlpSerialization, {
  traces: (data) => {
    const body = HttpBody.unsafeJson(data)
    const spans = Option.match(decodeTraces(data), {
      onNone: () => 0,
      onSome: (traces) =>
        traces.resourceSpans.reduce(
          (sum, resource) => sum + resource.scopeSpans.reduce((n, scope) => n + scope.spans.length, 0),
          0
        )
    })
    spansIn.set(body, spans)
    return body
  },
  metrics: (data) => HttpBody.unsafeJson(data),
  logs: (data) => HttpBody.unsafeJson(data)
})

/**
 * OpenTelemetry export over OTLP/HTTP (JSON) to the configured collector: spans in batches of
 * `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` or within `OTEL_BSP_SCHEDULE_DELAY`, metrics every
 * `OTEL_METRIC_EXPORT_INTERVAL`, both flushed at shutdown. Each signal has at most one export
 * outstanding, given `OTEL_EXPORTER_OTLP_TIMEOUT` (`BoundedExport`), so a collector that stops
 * answering costs dropped spans, never memory.
 */
export const telemetryLayer = (telemetry: TelemetrySettings) => {
  const resource = { serviceName: telemetry.serviceName }
  const headers = Redacted.value(telemetry.headers)
  return Layer.mergeAll(
    OtlpTracer.layer({
      url: `${telemetry.endpoint}/v1/traces`,
      resource,
      headers,
      exportInterval: telemetry.spanExportDelay,
      maxBatchSize: telemetry.spanBatchSize
    }).pipe(Layer.provide(BoundedExport("traces", telemetry.exportTimeout))),
    OtlpMetrics.layer({
      url: `${telemetry.endpoint}/v1/metrics`,
      resource,
      headers,
      exportInterval: telemetry.metricExportInterval
    }).pipe(Layer.provide(BoundedExport("metrics", telemetry.exportTimeout)))
  ).pipe(Layer.provide(serialization), Layer.provide(FetchHttpClient.layer))
}
