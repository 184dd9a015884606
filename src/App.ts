import { type HttpApi, HttpApiBuilder, type HttpApp, HttpMiddleware, HttpRouter, HttpServer } from "@effect/platform"
import { type Clock, Duration, Effect, FiberRef, Layer, Logger } from "effect"
import { AggregateRepo } from "./Analytics/AggregateRepo.js"
import { RebuildRepo } from "./Analytics/RebuildRepo.js"
import { Aggregator } from "./Analytics/Aggregator.js"
import { AnalyticsReads } from "./Analytics/AnalyticsReads.js"
import { CounterAdjustments } from "./Analytics/CounterAdjustments.js"
import { AnalyticsLive } from "./Analytics/Http.js"
import { withRedactedHeaders } from "./Telemetry/SecretUrls.js"
import { Api } from "./Api.js"
import { Authoring } from "./Authoring/Authoring.js"
import { AuthoringRepo } from "./Authoring/AuthoringRepo.js"
import { AuthoringLive } from "./Authoring/Http.js"
import { Drain, DrainOnShutdownLive } from "./Background/Drain.js"
import { HeapBoundLive } from "./Background/HeapBound.js"
import { JobLeases } from "./Background/JobLeases.js"
import { RoundGate } from "./Background/Jobs.js"
import { BackgroundJobs, RunBackgroundJobsLive } from "./BackgroundJobs.js"
import { LoopRounds } from "./Background/LoopRounds.js"
import { ApiKeyRepo } from "./Auth/ApiKeyRepo.js"
import { ConsoleRoutes } from "./Console/Routes.js"
import { AuthorizationLive } from "./Auth/Authorization.js"
import { KeyLive } from "./Auth/KeyHttp.js"
import { WriteAccessLive } from "./Auth/WriteAccess.js"
import { AppConfig, type AppSettings, DEFAULT_HOST } from "./Config.js"
import { EmbedSessionRepo } from "./Embeds/EmbedSessionRepo.js"
import { EmbedSessions } from "./Embeds/EmbedSessions.js"
import { EmbedSessionsLive } from "./Embeds/Http.js"
import { ErasuresLive } from "./Responses/ErasuresHttp.js"
import { Outbox } from "./Events/Outbox.js"
import { OutboxRepo } from "./Events/OutboxRepo.js"
import { Idempotency } from "./Http/Idempotency.js"
import { IdempotencyStore } from "./Http/IdempotencyStore.js"
import { idleTimeoutFor } from "./Http/IdleTimeout.js"
import { JsonBodyLive } from "./Http/JsonBody.js"
import { MAX_REQUEST_BODY_BYTES, RequestErrorsLive } from "./Http/RequestErrors.js"
import { withRequestId } from "./Http/RequestId.js"
import { DocsPageLive } from "./Http/DocsPage.js"
import { ReadinessLive } from "./Http/Readiness.js"
import { bunServerLayer, HealthLive, PreflightLive, serveMiddleware, serveMiddlewareMeasured } from "./Http/Server.js"
import { UsageLive } from "./Quota/Http.js"
import { RateLimiter } from "./Quota/RateLimiter.js"
import { UsageCounters } from "./Quota/UsageCounters.js"
import { UsageStoreLive } from "./Quota/UsageStore.js"
import { QuestionsLive } from "./Questions/Http.js"
import { QuestionReads } from "./Questions/QuestionReads.js"
import { QuestionRepo } from "./Questions/QuestionRepo.js"
import { EmbedRedemption } from "./Respondents/EmbedRedemption.js"
import { RespondentAuthLive, RespondentHttpLive } from "./Respondents/Http.js"
import { RespondentLimits } from "./Respondents/RespondentLimits.js"
import { RespondentPurge } from "./Respondents/RespondentPurge.js"
import { RespondentTokenRepo } from "./Respondents/RespondentTokenRepo.js"
import { RespondentTokens } from "./Respondents/RespondentTokens.js"
import { RespondentRoutes } from "./Respondents/Routes.js"
import { ChangeClockRepo } from "./Responses/ChangeClockRepo.js"
import { CsvExportRepo } from "./Responses/CsvExportRepo.js"
import { ExportSlots } from "./Responses/ExportSlots.js"
import { ResponsesLive } from "./Responses/Http.js"
import { ResponseDeletion } from "./Responses/ResponseDeletion.js"
import { ResponseDeletionRepo } from "./Responses/ResponseDeletionRepo.js"
import { ResponseReads } from "./Responses/ResponseReads.js"
import { ResponseRepo } from "./Responses/ResponseRepo.js"
import { ResponseWriteRepo } from "./Responses/ResponseWriteRepo.js"
import { ResponseWriter } from "./Responses/ResponseWriter.js"
import { SqlLive } from "./Sql/Database.js"
import { busyTimeoutMs } from "./Sql/Sqlite.js"
import { SqlDialectLive } from "./Sql/Dialect.js"
import { MigrationsLive } from "./Sql/Migrations.js"
import { Reader } from "./Sql/Reader.js"
import { Transactions } from "./Sql/Transactions.js"
import { SurveysLive } from "./Surveys/Http.js"
import { PrometheusLive } from "./Telemetry/Prometheus.js"
import { TelemetryLive, tracingEnabled } from "./Telemetry/Telemetry.js"
import { SurveyAccess } from "./Surveys/SurveyAccess.js"
import { SurveyLifecycle } from "./Surveys/SurveyLifecycle.js"
import { SurveyReads } from "./Surveys/SurveyReads.js"
import { SurveyRepo } from "./Surveys/SurveyRepo.js"
import { ClockAdvance } from "./TestClock/Advance.js"
import { TestClockServiceApi } from "./TestClock/Api.js"
import { clockMark } from "./TestClock/ClockMarkRepo.js"
import { TestClockHttpLive, withTestClockHeader } from "./TestClock/Http.js"
import { SimulatedClock } from "./TestClock/SimulatedClock.js"
import { Deliveries } from "./Webhooks/Deliveries.js"
import { DeliveryRepo } from "./Webhooks/DeliveryRepo.js"
import { DeliverySettings } from "./Webhooks/DeliverySettings.js"
import { WebhooksHttpLive } from "./Webhooks/Http.js"
import { Redelivery } from "./Webhooks/Redelivery.js"
import { RedeliveryRepo } from "./Webhooks/RedeliveryRepo.js"
import { Signer } from "./Webhooks/Signer.js"
import { WebhookRepo } from "./Webhooks/WebhookRepo.js"
import { Webhooks } from "./Webhooks/Webhooks.js"

// The service's layer graph, composed once. Services name what they need and never provide it
// themselves; this file says what provides it. Tests build the same graph with parts swapped
// (test/support/TestServer.ts).

/**
 * Refuses, before anything is migrated, a database first served on the other clock than this
 * process's (v1-extensions §X5.1).
 */
const ClockMarkCheckLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const mark = yield* clockMark
  yield* Effect.orDie(mark.check(config.testClock === undefined ? "real" : "simulated"))
}))

/** The database (SQLite or PostgreSQL), migrated, with its dialect, transactions and the request-path reader. Needs `AppConfig`. */
export const DatabaseLive = Layer.mergeAll(Reader.Default, SqlDialectLive, Transactions.Default).pipe(
  Layer.provideMerge(MigrationsLive),
  Layer.provideMerge(ClockMarkCheckLive),
  Layer.provideMerge(SqlLive)
)

/** Every repository: one part of the database each. Needs the database and `AppConfig`. */
export const RepositoriesLive = Layer.mergeAll(
  ApiKeyRepo.Default,
  SurveyRepo.Default,
  QuestionRepo.Default,
  ResponseRepo.Default,
  ResponseDeletionRepo.Default,
  CsvExportRepo.Default,
  ResponseWriteRepo.Default,
  ChangeClockRepo.Default,
  AggregateRepo.Default,
  RebuildRepo.Default,
  WebhookRepo.Default,
  DeliveryRepo.Default,
  RedeliveryRepo.Default,
  OutboxRepo.Default,
  EmbedSessionRepo.Default,
  RespondentTokenRepo.Default,
  IdempotencyStore.Default,
  UsageStoreLive,
  JobLeases.Default,
  AuthoringRepo.Default
)

/**
 * The services through which another feature or a feature's handlers reach its rows: they hand
 * out their repositories' functions, or add a change's policy (the analytics' counters), and open
 * no transaction: they run in their caller's.
 */
export const SharedServicesLive = Layer.mergeAll(
  Outbox.Default,
  SurveyReads.Default,
  QuestionReads.Default,
  ResponseReads.Default,
  AnalyticsReads.Default,
  CounterAdjustments.Default,
  UsageCounters.Default
)

/** Services over the repositories and the shared ones. */
export const ServicesLive = Layer.mergeAll(
  SurveyAccess.Default,
  SurveyLifecycle.Default,
  ResponseWriter.Default,
  RespondentTokens.Default,
  RespondentPurge.Default,
  RespondentLimits.Default,
  Deliveries.Default,
  Redelivery.Default,
  Aggregator.Default,
  ResponseDeletion.Default,
  Drain.Default,
  ExportSlots.Default,
  EmbedSessions.Default,
  Idempotency.Default
)

/** What a graph may have swapped: tests replace these with their own. */
export interface CoreParts {
  /** The repositories; a test may wrap the live ones (a repository that fails). */
  readonly repositories: typeof RepositoriesLive
  /** Signs webhook deliveries, for the delivery worker and `POST /webhooks/test` alike. */
  readonly signer: Layer.Layer<Signer>
  /** Hears the background loops' rounds: nobody in production, a recorder in tests. */
  readonly rounds: Layer.Layer<LoopRounds>
}

/**
 * The database with every repository and service over it: what the operator commands use and
 * what the server runs on. Needs `AppConfig`.
 */
export const makeCore = (parts: Partial<CoreParts> = {}) =>
  Layer.mergeAll(Authoring.Default, Webhooks.Default, EmbedRedemption.Default).pipe(
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(SharedServicesLive),
    Layer.provideMerge(parts.repositories ?? RepositoriesLive),
    Layer.provideMerge(parts.signer ?? Signer.StandardWebhooks),
    Layer.provideMerge(parts.rounds ?? LoopRounds.Silent),
    Layer.provideMerge(DatabaseLive)
  )

export const CoreLive = makeCore()

const groupsLive = [
  SurveysLive,
  QuestionsLive,
  ResponsesLive,
  EmbedSessionsLive,
  AnalyticsLive,
  UsageLive,
  WebhooksHttpLive,
  ErasuresLive,
  AuthoringLive,
  KeyLive,
  RespondentHttpLive
] as const

const handlerMiddlewareLive = [AuthorizationLive, WriteAccessLive, JsonBodyLive, RespondentAuthLive] as const

/** The HttpApi's handlers, each group requiring its services. */
const ApiLive = HttpApiBuilder.api(Api).pipe(Layer.provide(groupsLive), Layer.provide(handlerMiddlewareLive))

/** The same with the test clock's endpoints (v1-extensions §X5.1), which only a process on a simulated clock serves. */
const TestClockApiLive = HttpApiBuilder.api(TestClockServiceApi).pipe(
  Layer.provide([...groupsLive, TestClockHttpLive]),
  Layer.provide(handlerMiddlewareLive)
)

/** The HTTP surface over the handlers of `apiLive`, each answer passed through `answer`. */
const makeHttp = <E, R>(
  apiLive: Layer.Layer<HttpApi.Api, E, R>,
  answer: <AE, AR>(app: HttpApp.Default<AE, AR>) => HttpApp.Default<AE, AR> = (app) => app
) => Layer.unwrapEffect(Effect.map(tracingEnabled, (traced) => {
  const served = Layer.unwrapEffect(
    // Not `HttpApiBuilder.serve(middleware)`: the server applies that middleware outside its own
    // error handling, where the documented bodies for unmatched routes could no longer be set.
    Effect.gen(function*() {
      // A path parameter of any length reaches its schema, which answers 400 past its bound; the
      // router alone would answer 404 past 100 characters (request lines are bounded at 16 KiB).
      const app = yield* HttpRouter.withRouterConfig(HttpApiBuilder.httpApp, { maxParamLength: 16 * 1024 })
      const drain = yield* Drain
      return HttpServer.serve(answer(traced ? serveMiddlewareMeasured(app, drain) : serveMiddleware(app, drain)))
    })
  )
  /**
   * Measured shortcut: without an exporter the tracer is off, skipping the request, handler and
   * SQL spans that would reach nobody; logs keep the request id through the logger
   * (test/Telemetry.test.ts, test/RequestId.test.ts). Measurement:
   * docs/performance.md#measured-shortcuts, "Tracing off without an exporter".
   */
  return traced
    ? withRedactedHeaders(served)
    : served.pipe(
      HttpMiddleware.withTracerDisabledWhen(() => true),
      Layer.locally(FiberRef.currentTracerEnabled, false)
    )
})).pipe(
  Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
  Layer.provide(DocsPageLive),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(HealthLive),
  Layer.provide(PreflightLive),
  Layer.provide(ReadinessLive),
  Layer.provide(RespondentRoutes),
  Layer.provide(ConsoleRoutes),
  Layer.provide(RequestErrorsLive),
  Layer.provide(apiLive),
  HttpServer.withLogAddress
)

/**
 * The whole HTTP surface: `/api/v1`, the respondent pages and API, `/openapi.json`, `/docs`,
 * `/healthz`, `/readyz`. Needs an `HttpServer`, the core services and the request quota.
 */
export const HttpLive = makeHttp(ApiLive)

/** Everything that runs in the background of a server: every job of src/BackgroundJobs.ts on its loop. */
export const BackgroundLive = RunBackgroundJobsLive.pipe(Layer.provide(BackgroundJobs.Default))

export interface ServeParts {
  /** The background work; tests that drive it by hand leave it out. */
  readonly background: Layer.Layer<never, never, Layer.Layer.Context<typeof BackgroundLive>>
  /** The request quota (the rate limiter and the admission it gives the auth middleware). */
  readonly quota: Layer.Layer<Layer.Layer.Success<typeof RateLimiter.layer>, never, Layer.Layer.Context<typeof RateLimiter.layer>>
  /** The HTTP surface: `HttpLive`, or the same with the test clock's endpoints. */
  readonly http: Layer.Layer<
    Layer.Layer.Success<typeof HttpLive>,
    never,
    Layer.Layer.Context<typeof HttpLive> | Layer.Layer.Context<typeof BackgroundLive>
  >
}

/**
 * The HTTP surface, the request quota and the background work, with OpenTelemetry export when
 * configured. Needs an `HttpServer` and the core. When it stops, it first drains
 * (src/Background/Drain.ts): the drain is built last, so it is released first, while the server
 * and the background work still run.
 */
export const makeServe = (parts: Partial<ServeParts> = {}) =>
  DrainOnShutdownLive.pipe(
    Layer.provideMerge(Layer.mergeAll(parts.http ?? HttpLive, parts.background ?? BackgroundLive)),
    Layer.provideMerge(parts.quota ?? RateLimiter.layer),
    Layer.provide(TelemetryLive)
  )

/**
 * The production server: the serve graph on a Bun server on the configured address and port, its JavaScript
 * heap kept within bounds (src/Background/HeapBound.ts), and the Prometheus listener when
 * `METRICS_PORT` is set (src/Telemetry/Prometheus.ts). Needs the core. Its listener closes once
 * the drain is done, before the rest stops (`bunServerLayer`).
 */
export const ServerLive = (settings: AppSettings, serve: ReturnType<typeof makeServe> = makeServe()) =>
  serve.pipe(
    Layer.merge(HeapBoundLive),
    Layer.provide(Layer.unwrapEffect(Effect.map(DeliverySettings, (delivery) =>
      bunServerLayer({
        port: settings.port,
        hostname: settings.host ?? DEFAULT_HOST,
        maxRequestBodySize: MAX_REQUEST_BODY_BYTES,
        idleTimeout: idleTimeoutFor(
          Duration.max(Duration.decode(delivery.attemptTimeout), Duration.millis(busyTimeoutMs(settings)))
        )
      })
    ))),
    // Listening before the server is, stopped after it: every request the server answers is counted.
    Layer.provide(PrometheusLive)
  )

/**
 * The server on a simulated clock (v1-extensions §X5.1), with the test clock's endpoints and its
 * `Test-Clock` header. The background jobs run on their loops as they would at the simulated
 * instant while the clock stands; advancing the clock holds the loops' rounds back and runs the
 * same jobs' rounds in due order up to the new instant (src/TestClock/Advance.ts). Needs the core;
 * the process runs on `simulated`'s `Clock`.
 */
export const TestClockServerLive = (settings: AppSettings, simulated: SimulatedClock["Type"]) => {
  const clock = Layer.succeed(SimulatedClock, simulated)
  const jobs = BackgroundJobs.Default.pipe(Layer.provideMerge(Layer.effect(RoundGate, RoundGate.make)))
  const advance = ClockAdvance.Default.pipe(Layer.provideMerge(jobs), Layer.provideMerge(clock))
  return ServerLive(
    settings,
    makeServe({
      background: Layer.empty,
      http: Layer.mergeAll(makeHttp(TestClockApiLive, withTestClockHeader), RunBackgroundJobsLive).pipe(Layer.provide(advance))
    })
  )
}

/** The core for settings read once: what every command runs on. */
export const CoreFor = (settings: AppSettings) => CoreLive.pipe(Layer.provideMerge(Layer.succeed(AppConfig, settings)))

/**
 * Logging as configured: level and format (pretty on a TTY, JSON otherwise). On a simulated clock
 * the lines carry `real`'s time (v1-extensions §X5.1).
 */
export const LoggingLive = (settings: AppSettings, real?: Clock.Clock) => {
  const logger = withRequestId(settings.logFormat === "json" ? Logger.withConsoleLog(Logger.jsonLogger) : Logger.prettyLogger())
  return Layer.mergeAll(
    Logger.replace(
      Logger.defaultLogger,
      real === undefined
        ? logger
        : Logger.mapInputOptions(logger, (options) => ({ ...options, date: new Date(real.unsafeCurrentTimeMillis()) }))
    ),
    Logger.minimumLogLevel(settings.logLevel)
  )
}
