import * as Metrics from "@effect/opentelemetry/Metrics"
import * as Resource from "@effect/opentelemetry/Resource"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { MeterProvider } from "@opentelemetry/sdk-metrics"
import { Effect, Layer } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import type { MetricsSettings } from "../Config.js"

/**
 * The process's own readings, observed only when scraped: resident memory, CPU seconds, and the
 * event loop's delay (p99 and maximum since the previous scrape, from Node's `monitorEventLoopDelay`).
 */
const observeProcess = (provider: MeterProvider) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const meter = provider.getMeter("survey-service/process")
      const loop = monitorEventLoopDelay({ resolution: 10 })
      loop.enable()
      meter.createObservableGauge("process.resident_memory.bytes", {
        description: "Resident memory of the process, in bytes"
      }).addCallback((result) => result.observe(process.memoryUsage.rss()))
      meter.createObservableCounter("process.cpu.seconds", {
        description: "CPU time the process used, user and system, in seconds"
      }).addCallback((result) => {
        const used = process.cpuUsage()
        result.observe((used.user + used.system) / 1e6)
      })
      const lag = meter.createObservableGauge("nodejs.eventloop.lag.p99.seconds", {
        description: "99th percentile of the event loop's delay since the previous scrape, in seconds"
      })
      const lagMax = meter.createObservableGauge("nodejs.eventloop.lag.max.seconds", {
        description: "Longest delay of the event loop since the previous scrape, in seconds"
      })
      meter.addBatchObservableCallback((result) => {
        result.observe(lag, loop.count > 0 ? loop.percentile(99) / 1e9 : 0)
        result.observe(lagMax, loop.count > 0 ? loop.max / 1e9 : 0)
        loop.reset()
      }, [lag, lagMax])
      return loop
    }),
    (loop) => Effect.sync(() => loop.disable())
  )

/**
 * `GET /metrics` on a listener of its own at `METRICS_HOST`:`METRICS_PORT`, in the Prometheus
 * text format written by `@opentelemetry/exporter-prometheus`: the service's metrics (read from
 * Effect's registry at each scrape, as the OTLP exporter reads them) and the process's readings.
 * Started before the server answers; stopped when the process stops.
 */
export const prometheusLayer = (settings: MetricsSettings, serviceName: string) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const producer = yield* Metrics.makeProducer
    const exporter = new PrometheusExporter({
      host: settings.host,
      port: settings.port,
      endpoint: "/metrics",
      preventServerStart: true,
      metricProducers: [producer],
      withoutScopeInfo: true
    })
    const provider = new MeterProvider({ resource: yield* Resource.Resource, readers: [exporter] })
    yield* Effect.addFinalizer(() => Effect.promise(() => provider.shutdown().catch(() => {})))
    yield* observeProcess(provider)
    yield* Effect.tryPromise({
      try: () => exporter.startServer(),
      catch: (cause) =>
        new Error(`the metrics listener could not listen on ${settings.host}:${settings.port}: ${cause instanceof Error ? cause.message : String(cause)}`)
    })
    yield* Effect.logInfo(`Metrics on http://${settings.host}:${settings.port}/metrics`)
  })).pipe(Layer.provide(Resource.layer({ serviceName })))
