import {
  HttpApiBuilder,
  HttpApiScalar,
  HttpApp,
  HttpMiddleware,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Cause, Effect, FiberRef, Layer, Option } from "effect"
import { AnalyticsLive } from "../Analytics/Http.js"
import { Api } from "../Api.js"
import { ApiKeyRepo } from "../Auth/ApiKeyRepo.js"
import { AuthorizationLive } from "../Auth/Authorization.js"
import { WriteAccessLive } from "../Auth/WriteAccess.js"
import { EmbedSessions } from "../Embeds/EmbedSessions.js"
import { EmbedSessionsLive } from "../Embeds/Http.js"
import { UsageLive } from "../Quota/Http.js"
import { QuestionRepo } from "../Questions/QuestionRepo.js"
import { QuestionsLive } from "../Questions/Http.js"
import { RespondentTokens } from "../Respondents/RespondentTokens.js"
import { ResponseWriter } from "../Respondents/ResponseWriter.js"
import { RespondentRoutes } from "../Respondents/Routes.js"
import { ResponseRepo } from "../Responses/ResponseRepo.js"
import { CsvIgnoresPagingLive } from "../Responses/CsvParams.js"
import { ResponsesLive } from "../Responses/Http.js"
import { isSqliteBusy } from "../Sql/Busy.js"
import { SurveysLive } from "../Surveys/Http.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { SurveyRepo } from "../Surveys/SurveyRepo.js"
import { WebhooksHttpLive } from "../Webhooks/Http.js"
import { JsonBodyLive } from "./JsonBody.js"
import { RequestErrorsLive } from "./RequestErrors.js"
import { requestIdOf } from "./RequestId.js"

const errorJson = (status: number, code: string, message: string) =>
  HttpServerResponse.unsafeJson({ code, message }, { status })

/** The documented error body for whatever the API's own encoder did not answer. */
const unhandled = (request: HttpServerRequest.HttpServerRequest) => (cause: Cause.Cause<unknown>) => {
  const failure: unknown = Option.getOrUndefined(Cause.failureOption(cause))
  if (failure instanceof HttpServerError.RouteNotFound) {
    return Effect.succeed(errorJson(404, "not_found", `No route for ${request.method} ${request.url.split("?")[0]}.`))
  }
  if (Cause.isInterruptedOnly(cause)) {
    return Effect.succeed(errorJson(503, "service_unavailable", "The request was interrupted; it may be retried."))
  }
  const squashed = Cause.squash(cause)
  if (isSqliteBusy(squashed)) {
    return Effect.as(
      Effect.logWarning("database busy", cause),
      errorJson(503, "service_unavailable", "The service is busy; nothing changed and the request may be retried.")
    )
  }
  return Effect.as(
    Effect.logError("unhandled error", cause),
    errorJson(500, "internal_error", "The service failed to answer this request; it has been logged.")
  )
}

/**
 * Outermost middleware: a request id on every answer (and, through `withRequestId`, in every
 * log line), and the documented error body for whatever the API's own encoder did not answer.
 */
export const serveMiddleware = <E, R>(
  app: HttpApp.Default<E, R>
): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const requestId = requestIdOf(request)
    return Effect.map(
      Effect.catchAllCause(app, unhandled(request)),
      (response) => HttpServerResponse.setHeader(response, "x-request-id", requestId)
    )
  })

const PagesAndHealth = HttpApiBuilder.Router.use((router) =>
  router.get("/healthz", HttpServerResponse.json({ status: "ok" }))
)

const Repositories = Layer.mergeAll(ApiKeyRepo.Default, SurveyAccess.Default, QuestionRepo.Default, ResponseRepo.Default)
  .pipe(Layer.provideMerge(SurveyRepo.Default))

const RespondentServices = Layer.mergeAll(EmbedSessions.Default, RespondentTokens.Default, ResponseWriter.Default)

export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    SurveysLive,
    QuestionsLive,
    ResponsesLive,
    EmbedSessionsLive,
    AnalyticsLive,
    UsageLive,
    WebhooksHttpLive
  ]),
  Layer.provide([AuthorizationLive, WriteAccessLive, JsonBodyLive]),
  Layer.provide(Repositories),
  Layer.provide(RespondentServices)
)

/**
 * The whole HTTP surface: `/api/v1`, `/openapi.json`, `/docs`, `/healthz`. Needs an `HttpServer`
 * and the `RateLimiter` (`RateLimiter.Live`).
 */
export const HttpLive = Layer.unwrapEffect(
  Effect.map(HttpApiBuilder.httpApp, (app) => HttpServer.serve(serveMiddleware(app)))
).pipe(
  // No span exporter is configured, so request, handler and SQL spans reach nobody; building them
  // took about a fifth of a small read's CPU (docs/performance.md). Logs keep the request id.
  HttpMiddleware.withTracerDisabledWhen(() => true),
  Layer.locally(FiberRef.currentTracerEnabled, false),
  Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
  Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(PagesAndHealth),
  Layer.provide(RespondentRoutes.pipe(Layer.provide(Repositories), Layer.provide(RespondentServices))),
  Layer.provide(RequestErrorsLive),
  Layer.provide(CsvIgnoresPagingLive),
  Layer.provide(ApiLive),
  HttpServer.withLogAddress
)
