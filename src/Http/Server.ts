import {
  HttpApiBuilder,
  HttpApp,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import type { Drain } from "../Background/Drain.js"
import { isSqliteBusy } from "../Sql/Busy.js"
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

/** What a draining process answers to a request that arrives after it started to stop. */
const stopping = HttpServerResponse.setHeaders(
  errorJson(503, "service_unavailable", "The service is stopping; nothing changed and the request may be retried."),
  { connection: "close", "retry-after": "1" }
)

/**
 * Outermost middleware: a request id on every answer (and, through `withRequestId`, in every
 * log line), and the documented error body for whatever the API's own encoder did not answer.
 * Each request is work in flight that a drain waits for; once the process drains, new requests
 * (`/healthz` included, so that a load balancer stops sending) answer 503 and close the connection.
 */
export const serveMiddleware = <E, R>(
  app: HttpApp.Default<E, R>,
  drain: Drain
): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const requestId = requestIdOf(request)
    const answer = drain.isDraining()
      ? Effect.succeed(stopping)
      : drain.track(Effect.catchAllCause(app, unhandled(request)))
    return Effect.map(answer, (response) => HttpServerResponse.setHeader(response, "x-request-id", requestId))
  })

/** `GET /healthz`: 200 once the service is up (the database is migrated before it serves). */
export const HealthLive = HttpApiBuilder.Router.use((router) =>
  router.get("/healthz", HttpServerResponse.json({ status: "ok" }))
)

