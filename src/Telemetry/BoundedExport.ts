import { type HttpBody, HttpClient, HttpClientError } from "@effect/platform"
import { Data, Duration, Effect, Layer, Metric, Option } from "effect"

/** Spans in each trace export's body, noted when it is serialized. */
export const spansIn = new WeakMap<HttpBody.HttpBody, number>()

/** Exports dropped or given up, tagged `signal` (`traces`, `metrics`) and `reason` (`outstanding`, `timeout`). */
export const exportsDropped = Metric.counter("telemetry.exports.dropped", {
  description: "OTLP exports dropped while one was outstanding, or given up for want of an answer",
  incremental: true
})

/** Spans in trace exports dropped while one was outstanding. */
export const spansDropped = Metric.counter("telemetry.spans.dropped", {
  description: "Spans dropped because the collector had not answered the export before",
  incremental: true
})

/** An export dropped because the one before it is still outstanding. */
export class ExportDropped extends Data.TaggedError("ExportDropped")<{ readonly signal: string }> {}

type Reason = "outstanding" | "timeout"

/**
 * The HTTP client of one signal's exporter, bounded: at most one export outstanding, each given
 * `timeout` for its answer. The exporter sends a batch whenever one fills up, whether or not the
 * collector answered the last one, so a collector that takes connections and never answers would
 * otherwise keep every batch in memory. A batch that finds an export outstanding is dropped at
 * once, counted (`telemetry.exports.dropped`, `telemetry.spans.dropped`) and, the first time,
 * logged. It leaves as a defect rather than an `HttpClientError`, which the exporter's retry
 * policy would hold on to and send again; the exporter then pauses the signal for a minute, as
 * after any failed export. An export without an answer in time fails as a transport error, which
 * the exporter retries a few times before it pauses.
 */
export const BoundedExport = (signal: "traces" | "metrics", timeout: Duration.Duration) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const outstanding = yield* Effect.makeSemaphore(1)
      const warned = new Set<Reason>()
      const dropped = (reason: Reason, spans: number, message: string) =>
        Effect.suspend(() => {
          const first = !warned.has(reason)
          warned.add(reason)
          return Effect.all([
            Metric.increment(Metric.tagged(Metric.tagged(exportsDropped, "signal", signal), "reason", reason)),
            spans > 0 ? Metric.incrementBy(spansDropped, spans) : Effect.void,
            first ? Effect.logWarning(message).pipe(Effect.annotateLogs({ signal, reason })) : Effect.void
          ], { discard: true })
        })
      return HttpClient.transform(client, (response, request) =>
        response.pipe(
          Effect.timeoutOption(timeout),
          Effect.flatMap(Option.match({
            onSome: Effect.succeed,
            onNone: () =>
              dropped(
                "timeout",
                0,
                `OpenTelemetry: the collector did not answer a ${signal} export within ${Duration.format(timeout)}`
              ).pipe(Effect.zipRight(Effect.fail(
                new HttpClientError.RequestError({
                  request,
                  reason: "Transport",
                  description: `no answer within ${Duration.format(timeout)}`
                })
              )))
          })),
          outstanding.withPermitsIfAvailable(1),
          Effect.flatMap(Option.match({
            onSome: Effect.succeed,
            onNone: () =>
              dropped(
                "outstanding",
                spansIn.get(request.body) ?? 0,
                `OpenTelemetry: the collector has not answered the last ${signal} export; ${signal} are dropped ` +
                  "while it is outstanding (telemetry.exports.dropped, telemetry.spans.dropped)"
              ).pipe(Effect.zipRight(Effect.die(new ExportDropped({ signal }))))
          }))
        ))
    })
  )
