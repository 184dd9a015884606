import { HttpApiBuilder, HttpApiError, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option, Schema } from "effect"
import { InvalidRequest, InvalidRequestWire, type Issue } from "../Domain/Errors.js"

const encodeInvalidRequest = Schema.encodeSync(InvalidRequestWire)

const pathOf = (path: ReadonlyArray<PropertyKey>) => path.map(String).join(".")

/** Turns the framework's decode failures into the documented `invalid_request` body. */
export const toInvalidRequest = (error: HttpApiError.HttpApiDecodeError): InvalidRequest => {
  // A union reports one issue per member; the first one per path is the one a client can act on.
  const seen = new Set<string>()
  const issues: Array<Issue> = []
  for (const issue of error.issues) {
    const path = pathOf(issue.path)
    if (seen.has(path) || issues.length >= 20) continue
    seen.add(path)
    issues.push({ path, message: (issue.message.split("\n")[0] ?? "").slice(0, 300) })
  }
  const first = issues[0]
  return new InvalidRequest({
    message: first === undefined
      ? "The request is malformed."
      : `Invalid ${first.path === "" ? "request" : `\`${first.path}\``}: ${first.message}`,
    issues
  })
}

/**
 * Largest `/api/v1` request body. Every body the API takes (an embed session, webhook settings) is
 * a few hundred bytes; a larger declared one is refused before it is read. The HTTP server refuses
 * any body over `MAX_REQUEST_BODY_BYTES`, declared or not, before the service sees it.
 */
export const MAX_API_BODY_BYTES = 64 * 1024

/** The HTTP server's limit for every request body (the respondent API takes up to 256 KiB). */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024

const tooLarge = HttpServerResponse.unsafeJson(
  encodeInvalidRequest(
    new InvalidRequest({
      message: `The request body exceeds ${MAX_API_BODY_BYTES} bytes.`,
      issues: [{ path: "", message: `at most ${MAX_API_BODY_BYTES} bytes` }]
    })
  ),
  { status: 400 }
)

/**
 * API-level middleware: a body declared larger than `MAX_API_BODY_BYTES` is refused unread, and a
 * decode failure leaves as `invalid_request` with the documented body, before the framework's own
 * encoder would answer it with its internal shape.
 */
export const RequestErrorsLive = HttpApiBuilder.middleware((app) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const declared = Number(request.headers["content-length"] ?? "0")
    return declared > MAX_API_BODY_BYTES ? Effect.succeed(tooLarge) : answered(app)
  })
)

const answered = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchAllCause(app, (cause) => {
    const failure: unknown = Option.getOrUndefined(Cause.failureOption(cause))
    const squashed = Cause.squash(cause)
    if (squashed instanceof HttpServerError.RequestError && squashed.reason === "Decode") {
      // A body that is not JSON at all (or is empty) fails, as a defect, before the schema sees it.
      const error = new InvalidRequest({
        message: "The request body is missing or is not valid JSON.",
        issues: [{ path: "", message: "expected a JSON body" }]
      })
      return Effect.succeed(HttpServerResponse.unsafeJson(encodeInvalidRequest(error), { status: 400 }))
    }
    return failure instanceof HttpApiError.HttpApiDecodeError
      ? Effect.succeed(HttpServerResponse.unsafeJson(encodeInvalidRequest(toInvalidRequest(failure)), { status: 400 }))
      : Effect.failCause(cause)
  })
