import { describe, expect, it } from "@effect/vitest"
import {
  ConfigProvider,
  Deferred,
  Duration,
  Effect,
  Either,
  Logger,
  Metric,
  Option,
  Redacted,
  Schema,
  Stream,
  SubscriptionRef,
  TestClock
} from "effect"
import { AppConfig, parseOtlpHeaders } from "../src/Config.js"
import { exportsDropped, spansDropped } from "../src/Telemetry/BoundedExport.js"
import { telemetryLayer } from "../src/Telemetry/Otlp.js"
import { SurveyId } from "../src/Domain/Ids.js"
import { EmbedSessionRequest } from "../src/Embeds/Api.js"
import { clientFor } from "./support/ApiClient.js"
import { baseFixture, TOKENS } from "./support/Fixtures.js"
import { call, get, TestServer, testDatabase } from "./support/TestServer.js"
import { receiver } from "./support/WebhookReceiver.js"

interface Export {
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly text: string
  readonly body: unknown
}

/** A local OTLP/HTTP (JSON) collector on 127.0.0.1 that keeps every export it receives. */
const collector = Effect.gen(function*() {
  const exports = yield* SubscriptionRef.make<ReadonlyArray<Export>>([])
  const server = yield* Effect.acquireRelease(
    Effect.sync(() =>
      Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        async fetch(request) {
          const text = await request.text()
          const item: Export = {
            path: new URL(request.url).pathname,
            headers: Object.fromEntries(request.headers.entries()),
            text,
            body: JSON.parse(text)
          }
          Effect.runSync(SubscriptionRef.update(exports, (all) => [...all, item]))
          return Response.json({})
        }
      })
    ),
    (server) => Effect.promise(() => server.stop(true))
  )
  /** Waits (on each arrival, not on a timer) for the first export that `find` picks something from. */
  const awaitExport = <A>(find: (item: Export) => A | undefined) =>
    exports.changes.pipe(
      Stream.filterMap((all) => {
        for (const item of all) {
          const found = find(item)
          if (found !== undefined) return Option.some(found)
        }
        return Option.none()
      }),
      Stream.runHead,
      Effect.map(Option.getOrThrow)
    )
  return { url: `http://127.0.0.1:${server.port}`, awaitExport }
})

const Value = Schema.Struct({
  stringValue: Schema.optional(Schema.String),
  intValue: Schema.optional(Schema.Union(Schema.String, Schema.Number))
})
const Attributes = Schema.Array(Schema.Struct({ key: Schema.String, value: Value }))
const Traces = Schema.Struct({
  resourceSpans: Schema.Array(Schema.Struct({
    resource: Schema.Struct({ attributes: Attributes }),
    scopeSpans: Schema.Array(Schema.Struct({
      spans: Schema.Array(Schema.Struct({ name: Schema.String, attributes: Attributes }))
    }))
  }))
})
const Metrics = Schema.Struct({
  resourceMetrics: Schema.Array(Schema.Struct({
    scopeMetrics: Schema.Array(Schema.Struct({
      metrics: Schema.Array(Schema.Struct({
        name: Schema.String,
        sum: Schema.optional(Schema.Struct({
          dataPoints: Schema.Array(Schema.Struct({
            attributes: Attributes,
            asInt: Schema.optional(Schema.Union(Schema.String, Schema.Number)),
            asDouble: Schema.optional(Schema.Number)
          }))
        }))
      }))
    }))
  }))
})

const attribute = (attributes: typeof Attributes.Type, key: string) => {
  const value = attributes.find((a) => a.key === key)?.value
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : String(value.intValue))
}

const decode = <A, I>(schema: Schema.Schema<A, I>, body: unknown) =>
  Either.getOrUndefined(Schema.decodeUnknownEither(schema)(body))

/** The server's settings to export to a local collector at `url`, quickly. */
const exportingTo = (url: string) => ({
  telemetry: {
    endpoint: url,
    serviceName: "survey-service-test",
    headers: Redacted.make({ "x-collector-key": "collector-secret" }),
    spanExportDelay: Duration.millis(50),
    metricExportInterval: Duration.millis(50),
    spanBatchSize: 512,
    exportTimeout: Duration.seconds(10)
  }
})

describe("OpenTelemetry export over OTLP/HTTP", () => {
  it.live("a request's span (route, status, request id) and its request metric reach a local collector", () =>
    Effect.gen(function*() {
      const otlp = yield* collector
      const settings = exportingTo(otlp.url)
      yield* Effect.gen(function*() {
        const res = yield* get("/api/v1/surveys/srv_main", TOKENS.editor)
        expect(res.status).toBe(200)
        const requestId = res.headers["x-request-id"]

        const traced = yield* otlp.awaitExport((item) => {
          if (item.path !== "/v1/traces") return undefined
          const traces = decode(Traces, item.body)
          for (const resource of traces?.resourceSpans ?? []) {
            for (const scope of resource.scopeSpans) {
              const span = scope.spans.find((s) => attribute(s.attributes, "http.route") === "/api/v1/surveys/:id")
              if (span !== undefined) return { item, resource, span }
            }
          }
          return undefined
        })
        expect(attribute(traced.span.attributes, "http.response.status_code")).toBe("200")
        expect(attribute(traced.span.attributes, "http.request.id")).toBe(requestId)
        expect(attribute(traced.resource.resource.attributes, "service.name")).toBe("survey-service-test")
        expect(traced.item.headers["x-collector-key"]).toBe("collector-secret")
        // The API key never leaves in telemetry (the authorization header is redacted).
        expect(traced.item.text).not.toContain(TOKENS.editor)

        // The statements behind it are spans too.
        const statement = yield* otlp.awaitExport((item) =>
          item.path !== "/v1/traces" ? undefined : decode(Traces, item.body)?.resourceSpans
            .flatMap((r) => r.scopeSpans.flatMap((scope) => scope.spans))
            .find((s) => s.name === "sql.execute" && (attribute(s.attributes, "db.query.text") ?? "").includes("surveys"))
        )
        expect(attribute(statement.attributes, "db.system.name")).toBe(testDatabase === "postgres" ? "postgresql" : "sqlite")

        const counted = yield* otlp.awaitExport((item) => {
          if (item.path !== "/v1/metrics") return undefined
          const metrics = decode(Metrics, item.body)
          for (const resource of metrics?.resourceMetrics ?? []) {
            for (const scope of resource.scopeMetrics) {
              for (const metric of scope.metrics) {
                if (metric.name !== "http.server.requests") continue
                const point = metric.sum?.dataPoints.find((p) =>
                  attribute(p.attributes, "route") === "/api/v1/surveys/:id" && attribute(p.attributes, "status") === "200"
                )
                if (point !== undefined) return point
              }
            }
          }
          return undefined
        })
        expect(Number(counted.asInt ?? counted.asDouble)).toBeGreaterThanOrEqual(1)
      }).pipe(Effect.provide(TestServer(baseFixture, settings)))
    }).pipe(Effect.scoped))
})

describe("secrets in exported spans", () => {
  it.live("an embed URL's token is replaced by {token} in the request's span", () =>
    Effect.gen(function*() {
      const otlp = yield* collector
      const settings = exportingTo(otlp.url)
      yield* Effect.gen(function*() {
        const api = yield* clientFor(TOKENS.editor)
        const created = yield* api.embedSessions.create({
          path: { id: SurveyId.make("srv_main") },
          payload: new EmbedSessionRequest({ externalUserId: "person-traced" }),
          headers: {}
        })
        const path = new URL(created.embedUrl).pathname
        const token = path.split("/").pop() ?? ""
        expect(token).toHaveLength(43)
        // The test's own client records no span: only the service's spans are exported.
        const opened = yield* call("GET", path, { headers: { accept: "application/json", referer: `http://127.0.0.1${path}` } })
          .pipe(Effect.withTracerEnabled(false))
        expect(opened.status).toBe(200)

        const span = yield* otlp.awaitExport((item) =>
          item.path !== "/v1/traces" ? undefined : decode(Traces, item.body)?.resourceSpans
            .flatMap((r) => r.scopeSpans.flatMap((scope) => scope.spans))
            .find((s) => attribute(s.attributes, "http.route") === "/embed/:token")
        )
        expect(attribute(span.attributes, "url.path")).toBe("/embed/{token}")
        expect(attribute(span.attributes, "url.full")).toMatch(/\/embed\/\{token\}$/)
        expect(attribute(span.attributes, "http.request.header.referer")).toBe("http://127.0.0.1/embed/{token}")
        expect(JSON.stringify(span)).not.toContain(token)
        // Nothing exported up to that span carries it either.
        const leaked = yield* otlp.awaitExport((item) => item.text.includes("/embed/{token}") ? item.text.includes(token) : undefined)
        expect(leaked).toBe(false)
      }).pipe(Effect.provide(TestServer(baseFixture, settings)))
    }).pipe(Effect.scoped))
})

describe("the Idempotency-Key in exported spans", () => {
  it.live("is redacted in the request's span: it seals the stored embed-URL answer", () =>
    Effect.gen(function*() {
      const otlp = yield* collector
      const settings = exportingTo(otlp.url)
      yield* Effect.gen(function*() {
        const key = "idem-traced-7f3a9c2e51"
        const created = yield* call("POST", "/api/v1/surveys/srv_main/embed-sessions", {
          token: TOKENS.editor,
          headers: { "idempotency-key": key },
          body: JSON.stringify({ externalUserId: "person-keyed" })
        }).pipe(Effect.withTracerEnabled(false))
        expect(created.status).toBe(201)

        const span = yield* otlp.awaitExport((item) =>
          item.path !== "/v1/traces" ? undefined : decode(Traces, item.body)?.resourceSpans
            .flatMap((r) => r.scopeSpans.flatMap((scope) => scope.spans))
            .find((s) => attribute(s.attributes, "http.route") === "/api/v1/surveys/:id/embed-sessions")
        )
        expect(attribute(span.attributes, "http.request.header.idempotency-key")).toBe("<redacted>")
        expect(JSON.stringify(span)).not.toContain(key)
        const leaked = yield* otlp.awaitExport((item) => item.text.includes("embed-sessions") ? item.text.includes(key) : undefined)
        expect(leaked).toBe(false)
      }).pipe(Effect.provide(TestServer(baseFixture, settings)))
    }).pipe(Effect.scoped))
})

describe("OTEL_* settings", () => {
  const read = (env: Record<string, string>) =>
    AppConfig.fromEnv().pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

  it.effect("no endpoint, no telemetry", () =>
    Effect.gen(function*() {
      expect((yield* read({})).telemetry).toBeUndefined()
      expect((yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).telemetry).toBeUndefined()
    }))

  it.effect("the endpoint with the standard variables and their defaults", () =>
    Effect.gen(function*() {
      const defaults = (yield* read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).telemetry
      expect(defaults?.endpoint).toBe("http://collector:4318")
      expect(defaults?.serviceName).toBe("survey-service")
      expect(Duration.toMillis(defaults?.spanExportDelay ?? Duration.zero)).toBe(5000)
      expect(Duration.toMillis(defaults?.metricExportInterval ?? Duration.zero)).toBe(10_000)
      expect(defaults?.spanBatchSize).toBe(512)
      expect(Duration.toMillis(defaults?.exportTimeout ?? Duration.zero)).toBe(10_000)
      const set = (yield* read({
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://otlp.example.com",
        OTEL_SERVICE_NAME: "surveys-eu",
        OTEL_EXPORTER_OTLP_HEADERS: "api-key=abc%3D%3D,X-Tenant=eu",
        OTEL_BSP_SCHEDULE_DELAY: "1000",
        OTEL_METRIC_EXPORT_INTERVAL: "60000",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "100",
        OTEL_EXPORTER_OTLP_TIMEOUT: "2500"
      })).telemetry
      expect(set?.serviceName).toBe("surveys-eu")
      expect(set === undefined ? undefined : Redacted.value(set.headers)).toEqual({ "api-key": "abc==", "x-tenant": "eu" })
      expect(String(set?.headers)).not.toContain("abc")
      expect(Duration.toMillis(set?.spanExportDelay ?? Duration.zero)).toBe(1000)
      expect(Duration.toMillis(set?.metricExportInterval ?? Duration.zero)).toBe(60_000)
      expect(set?.spanBatchSize).toBe(100)
      expect(Duration.toMillis(set?.exportTimeout ?? Duration.zero)).toBe(2500)
    }))

  it.effect("malformed values are refused rather than ignored", () =>
    Effect.gen(function*() {
      for (const env of [
        { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" },
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_BSP_SCHEDULE_DELAY: "0" },
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_METRIC_EXPORT_INTERVAL: "soon" },
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "0" },
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_TIMEOUT: "-5" },
        { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "no-equals-sign" }
      ]) {
        expect(Either.isLeft(yield* Effect.either(read(env))), JSON.stringify(env)).toBe(true)
      }
      expect(parseOtlpHeaders("a=%ZZ")._tag).toBe("Left")
    }))
})

/**
 * A collector on 127.0.0.1 that takes every trace export and never answers it; `aborted` is done
 * when the exporter gives one up. Metric exports are answered, so that the test's shutdown flushes them.
 */
const silentCollector = Effect.gen(function*() {
  const aborted = yield* Deferred.make<void>()
  const collector = yield* receiver((request) => {
    if (new URL(request.url).pathname !== "/v1/traces") return Response.json({})
    request.signal.addEventListener("abort", () => Effect.runSync(Deferred.succeed(aborted, undefined)))
    return new Promise<Response>(() => {})
  })
  return { ...collector, url: `http://127.0.0.1:${collector.port}`, aborted: Deferred.await(aborted) }
})

describe("OTLP export to a collector that never answers", () => {
  it.scoped("keeps one export outstanding per signal; later batches are dropped, counted and logged once", () =>
    Effect.gen(function*() {
      const otlp = yield* silentCollector
      const warnings = yield* SubscriptionRef.make<ReadonlyArray<string>>([])
      const capture = Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") Effect.runSync(SubscriptionRef.update(warnings, (all) => [...all, String(message)]))
      })
      const awaitWarning = (part: string) =>
        warnings.changes.pipe(Stream.filter((all) => all.some((m) => m.includes(part))), Stream.runHead)
      const timeout = Duration.seconds(30)
      const settings = {
        endpoint: otlp.url,
        serviceName: "survey-service-test",
        headers: Redacted.make({}),
        spanExportDelay: Duration.hours(1),
        metricExportInterval: Duration.hours(1),
        spanBatchSize: 2,
        exportTimeout: timeout
      }
      const spans = (count: number) =>
        Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => Effect.withSpan(Effect.void, `work ${i}`), {
          discard: true
        })
      const droppedSpans = Effect.map(Metric.value(spansDropped), (state) => state.count)
      const droppedExports = Effect.map(
        Metric.value(Metric.tagged(Metric.tagged(exportsDropped, "signal", "traces"), "reason", "outstanding")),
        (state) => state.count
      )
      const before = { spans: yield* droppedSpans, exports: yield* droppedExports }

      yield* Effect.gen(function*() {
        // The first full batch goes out, and stays unanswered.
        yield* spans(2)
        yield* otlp.receivedAtLeast(1)
        // The next one finds it outstanding: dropped, counted, logged.
        yield* spans(2)
        yield* awaitWarning("has not answered the last traces export")
        // Many more batches: none reaches the collector while the first is outstanding.
        yield* spans(200)
        expect(yield* otlp.received).toHaveLength(1)
        expect((yield* droppedExports) - before.exports).toBeGreaterThanOrEqual(1)
        expect((yield* droppedSpans) - before.spans).toBeGreaterThanOrEqual(2)
        expect((yield* SubscriptionRef.get(warnings)).filter((m) => m.includes("has not answered"))).toHaveLength(1)

        // The outstanding export is given up after the timeout: the connection is closed.
        yield* TestClock.adjust(timeout)
        yield* awaitWarning("did not answer a traces export within")
        yield* otlp.aborted
      }).pipe(Effect.provide(telemetryLayer(settings)), Effect.provide(Logger.add(capture)))
    }))
})
