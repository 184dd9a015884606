import { Effect, Layer } from "effect"
import { AppConfig } from "../Config.js"

/**
 * The Prometheus listener when `METRICS_PORT` is set (v1-extensions §X6). Unset, it is an empty
 * layer: no listener, and the exporter's modules (src/Telemetry/PrometheusEndpoint.ts) are never loaded.
 */
export const PrometheusLive = Layer.unwrapEffect(Effect.flatMap(AppConfig, (config) => {
  const metrics = config.metrics
  return metrics === undefined
    ? Effect.succeed(Layer.empty)
    : Effect.map(
      Effect.promise(() => import("./PrometheusEndpoint.js")),
      (endpoint) => endpoint.prometheusLayer(metrics, config.telemetry?.serviceName ?? "survey-service")
    )
}))
