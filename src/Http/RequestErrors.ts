import { HttpApiBuilder, HttpApiError, HttpServerError, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option, Schema } from "effect"
import { InvalidRequest } from "../Domain/Errors.js"
import { invalidRequestOf, wordIssues } from "./Issues.js"

const encodeInvalidRequest = Schema.encodeSync(InvalidRequest.Wire)

/**
 * Turns the framework's decode failures into the documented `invalid_request` body: every problem
 * of the body, worded as src/Http/Issues.ts says.
 */
export const toInvalidRequest = (error: HttpApiError.HttpApiDecodeError): InvalidRequest =>
  invalidRequestOf(wordIssues(error.issues))

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

/** The HTTP server's limit for every request body (the respondent API takes up to 256 KiB). */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024

/**
 * API-level middleware: a decode failure leaves as `invalid_request` with the documented body,
 * before the framework's own encoder would answer it with its internal shape. (The size and shape
 * of bodies are checked by `JsonBody`, once the key is known.)
 */
export const RequestErrorsLive = HttpApiBuilder.middleware(answered)

