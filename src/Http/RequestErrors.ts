import { HttpApiBuilder, HttpApiError, HttpServerError, HttpServerResponse } from "@effect/platform"
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
 * API-level middleware: a decode failure leaves as `invalid_request` with the documented body,
 * before the framework's own encoder would answer it with its internal shape.
 */
export const RequestErrorsLive = HttpApiBuilder.middleware((app) =>
  Effect.catchAllCause(app, (cause) => {
    const failure: unknown = Option.getOrUndefined(Cause.failureOption(cause))
    const defect: unknown = Option.getOrUndefined(Cause.dieOption(cause))
    if (defect instanceof HttpServerError.RequestError && defect.reason === "Decode") {
      // A body that is not JSON at all (empty, truncated) dies in the framework before the schema sees it.
      const invalid = new InvalidRequest({ message: "The request body is not valid JSON.", issues: [] })
      return Effect.succeed(HttpServerResponse.unsafeJson(encodeInvalidRequest(invalid), { status: 400 }))
    }
    return failure instanceof HttpApiError.HttpApiDecodeError
      ? Effect.succeed(HttpServerResponse.unsafeJson(encodeInvalidRequest(toInvalidRequest(failure)), { status: 400 }))
      : Effect.failCause(cause)
  })
)
