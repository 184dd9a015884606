import { HttpServerRequest } from "@effect/platform"
import { Context, FiberRef, FiberRefs, HashMap, Logger, Option } from "effect"
import { randomBase62 } from "../Domain/Ids.js"

const requestIdPattern = /^[A-Za-z0-9._-]{8,128}$/

// By the underlying request, which every derived `HttpServerRequest` of one request shares.
const assigned = new WeakMap<object, string>()

const keyOf = (request: HttpServerRequest.HttpServerRequest): object =>
  typeof request.source === "object" && request.source !== null ? request.source : request

// Headers the answer to a request carries whatever answers it (its handler, an error, the 500
// fallback), by the underlying request as above: set while the request is served (the request
// quota's `RateLimit-*`), added by `serveMiddleware` with `x-request-id`.
const answerHeaders = new WeakMap<object, Readonly<Record<string, string>>>()

/** Adds `headers` to the answer to `request` (replacing what an earlier call added). */
export const setAnswerHeaders = (request: HttpServerRequest.HttpServerRequest, headers: Readonly<Record<string, string>>): void => {
  answerHeaders.set(keyOf(request), headers)
}

/** The headers `setAnswerHeaders` added for `request`, if any. */
export const answerHeadersOf = (request: HttpServerRequest.HttpServerRequest): Readonly<Record<string, string>> | undefined =>
  answerHeaders.get(keyOf(request))

/**
 * The id of a request: its `x-request-id` when that is 8–128 of `A-Z a-z 0-9 . _ -`, otherwise one
 * made up the first time it is asked for. It is answered in `x-request-id` and logged with every
 * line the request writes.
 */
export const requestIdOf = (request: HttpServerRequest.HttpServerRequest): string => {
  const key = keyOf(request)
  let id = assigned.get(key)
  if (id === undefined) {
    const incoming = request.headers["x-request-id"]
    id = incoming !== undefined && requestIdPattern.test(incoming) ? incoming : `req_${randomBase62(16)}`
    assigned.set(key, id)
  }
  return id
}

/**
 * Adds `requestId` to the annotations of every line logged while a request is served. It is read
 * from the request in the logging fiber's context when a line is written, so that serving a
 * request that logs nothing costs nothing.
 */
export const withRequestId = <M, O>(logger: Logger.Logger<M, O>): Logger.Logger<M, O> =>
  Logger.mapInputOptions(logger, (options) => {
    const context = FiberRefs.getOrDefault(options.context, FiberRef.currentContext)
    const request = Context.getOption(context, HttpServerRequest.HttpServerRequest)
    if (Option.isNone(request)) return options
    const id = assigned.get(keyOf(request.value))
    return id === undefined ? options : { ...options, annotations: HashMap.set(options.annotations, "requestId", id) }
  })
