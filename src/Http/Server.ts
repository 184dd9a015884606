import {
  HttpApiBuilder,
  HttpApp,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Cause, Context, Effect, ExecutionStrategy, Exit, Layer, Metric, MetricLabel, Option, Scope } from "effect"
import { type Drain, Listener } from "../Background/Drain.js"
import { MAX_ERROR_MESSAGE_LENGTH } from "../Domain/Bounds.js"
import { httpRequestDuration, httpRequests } from "../Telemetry/Metrics.js"
import { redactSecretUrls } from "../Telemetry/SecretUrls.js"
import { isPgPoolExhausted, isPgStatementTimeout, isPgUnavailable, isSqliteBusy, isStalePlan } from "../Sql/Busy.js"
import { isReadinessProbe } from "./Readiness.js"
import { answerHeaders, assignRequestId } from "./RequestId.js"

/** The documented error body; the message is cut to its bound (it may quote the request's path). */
const errorJson = (status: number, code: string, message: string) =>
  HttpServerResponse.unsafeJson({ code, message: message.slice(0, MAX_ERROR_MESSAGE_LENGTH) }, { status })

export const statementTimeoutMessage = "The service is busy: the database did not finish in time; nothing changed and the request may be retried."

export const poolExhaustedMessage = "The service is busy: no database connection came free in time; nothing changed and the request may be retried."

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
  if (isPgPoolExhausted(squashed)) {
    return Effect.as(
      Effect.logWarning("no database connection came free in time", cause),
      errorJson(503, "service_unavailable", poolExhaustedMessage)
    )
  }
  if (isPgStatementTimeout(squashed)) {
    return Effect.as(
      Effect.logWarning("database statement timed out", cause),
      errorJson(503, "service_unavailable", statementTimeoutMessage)
    )
  }
  if (isStalePlan(squashed)) {
    return Effect.as(
      Effect.logWarning("a prepared statement went stale after a migration; it is prepared anew", cause),
      errorJson(503, "service_unavailable", "The database schema changed during the request; nothing changed and the request may be retried.")
    )
  }
  if (isPgUnavailable(squashed)) {
    return Effect.as(
      Effect.logWarning("database unavailable", cause),
      errorJson(503, "service_unavailable", "The database cannot be reached; the request may be retried.")
    )
  }
  return Effect.as(
    Effect.logError("unhandled error", cause),
    errorJson(500, "internal_error", "The service failed to answer this request; it has been logged.")
  )
}

/** What a draining process answers to a request that arrives after it started to stop. */
const stopping = HttpServerResponse.setHeaders(
  errorJson(503, "service_unavailable", "The service is stopping; nothing changed and the request may be retried."),
  { connection: "close", "retry-after": "1" }
)

/**
 * Outermost middleware: a request id on every answer (and, through `withRequestId`, in every
 * log line) with the headers added for the request while it was served (`addAnswerHeaders`: the
 * request quota's), and the documented error body for whatever the API's own encoder did not answer.
 * Each request is work in flight that a drain waits for; once the process drains, new requests
 * (`/healthz` included, so that a load balancer stops sending) answer 503 and close the connection;
 * `/readyz` alone still answers, with its own 503 saying the process drains.
 */
export const serveMiddleware = <E, R>(
  app: HttpApp.Default<E, R>,
  drain: Drain
): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.flatMap(assignRequestId(request), (requestId) => {
      const answer = drain.isDraining() && !isReadinessProbe(request)
        ? Effect.succeed(stopping)
        : drain.track(Effect.catchAllCause(app, unhandled(request)))
      return Effect.flatMap(answer, (response) =>
        Effect.map(answerHeaders, (added) =>
          added === undefined
            ? HttpServerResponse.setHeader(response, "x-request-id", requestId)
            : HttpServerResponse.setHeaders(response, { ...added, "x-request-id": requestId })))
    }))

/**
 * `serveMiddleware` when telemetry is exported: the request's span (made by the server) also
 * carries the request id, and every answer counts in `http.server.requests` and
 * `http.server.request.duration` by route template, method and status.
 */
export const serveMiddlewareMeasured = <E, R>(
  app: HttpApp.Default<E, R>,
  drain: Drain
): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> => {
  const served = serveMiddleware(app, drain)
  return Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const started = performance.now()
    const span = Option.getOrUndefined(yield* Effect.option(Effect.currentSpan))
    if (span !== undefined) redactSecretUrls(span)
    const response = yield* served
    const requestId = response.headers["x-request-id"]
    if (span !== undefined && requestId !== undefined) span.attribute("http.request.id", requestId)
    const route = span?.attributes.get("http.route")
    const tags = {
      route: typeof route === "string" ? route : "unmatched",
      method: knownMethods.has(request.method) ? request.method : "other",
      status: String(response.status)
    }
    yield* Metric.increment(Metric.taggedWithLabels(httpRequests, labels(tags)))
    yield* Metric.update(Metric.taggedWithLabels(httpRequestDuration, labels(tags)), performance.now() - started)
    return response
  })
}

/** The methods a request's `method` label names; any other is `other`, so that the label's values stay few. */
const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

const labels = (tags: Record<string, string>) => Object.entries(tags).map(([key, value]) => MetricLabel.make(key, value))

/** `GET /healthz`: 200 once the service is up (the database is migrated before it serves). */
export const HealthLive = HttpApiBuilder.Router.use((router) =>
  router.get("/healthz", HttpServerResponse.json({ status: "ok" }))
)


/**
 * A Bun HTTP server whose listener the drain closes (`Listener`). The platform's own layer stops
 * listening only when it is released, after the routes and the background work: a stopping
 * process then answered its plain-text `404 not found` (no documented body, no request id) to
 * every request, for as long as the background work took to stop. Closing the listener is a
 * graceful stop: idle connections close, requests in flight finish on the routes still served.
 */
export const bunServerLayer = (options: BunHttpServer.ServeOptions<{}>) =>
  Layer.scopedContext(Effect.gen(function*() {
    const listening = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const server = yield* Scope.extend(BunHttpServer.make(options), listening)
    return Context.make(HttpServer.HttpServer, server).pipe(
      Context.add(Listener, { close: Scope.close(listening, Exit.void) })
    )
  })).pipe(Layer.provideMerge(BunHttpServer.layerContext))

/**
 * `OPTIONS` on the APIs: the answer to a browser's CORS preflight. The APIs are server-to-server
 * and grant no cross-origin access (docs/api.md#cross-origin-requests-cors): 403 with the documented body and no
 * `Access-Control-*` header, so a page on another origin is refused before its request is sent.
 */
export const PreflightLive = HttpApiBuilder.Router.use((router) => {
  const refused = Effect.succeed(errorJson(
    403,
    "forbidden",
    "Cross-origin requests are not served: this API is server-to-server (no CORS). Call it from your server, " +
      "where the API key stays."
  ))
  return Effect.zipRight(router.options("/api/v1/*", refused), router.options("/respond/v1/*", refused))
})
