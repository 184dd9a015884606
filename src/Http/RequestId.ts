import type { HttpServerRequest } from "@effect/platform"
import { Effect, FiberRef, FiberRefs, HashMap, Logger } from "effect"
import { randomBase62 } from "../Domain/Ids.js"

const requestIdPattern = /^[A-Za-z0-9._-]{8,128}$/

/**
 * The id of the request the fiber serves (and the fibers it forks, which inherit it): each request
 * is served by a fiber of its own, which `serveMiddleware` gives the id first.
 */
const currentRequestId = FiberRef.unsafeMake<string | undefined>(undefined)

/**
 * Headers the answer to the request the fiber serves carries whatever answers it (its handler, an
 * error, the 500 fallback): the request quota's `RateLimit-*`, a refusal's `Retry-After`.
 * `serveMiddleware` adds them with `x-request-id` once the answer is made.
 */
const currentAnswerHeaders = FiberRef.unsafeMake<Readonly<Record<string, string>> | undefined>(undefined)

/** Adds `headers` to the answer to the request being served (replacing those of the same names). */
export const addAnswerHeaders = (headers: Readonly<Record<string, string>>): Effect.Effect<void> =>
  FiberRef.update(currentAnswerHeaders, (added) => added === undefined ? headers : { ...added, ...headers })

/** The headers `addAnswerHeaders` added for the request being served, if any. */
export const answerHeaders: Effect.Effect<Readonly<Record<string, string>> | undefined> = FiberRef.get(currentAnswerHeaders)

/**
 * Gives the request being served its id: its `x-request-id` when that is 8–128 of
 * `A-Z a-z 0-9 . _ -`, otherwise one made up. It is answered in `x-request-id` and logged with every
 * line the request writes.
 */
export const assignRequestId = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string> => {
  const incoming = request.headers["x-request-id"]
  const id = incoming !== undefined && requestIdPattern.test(incoming) ? incoming : `req_${randomBase62(16)}`
  return Effect.as(FiberRef.set(currentRequestId, id), id)
}

/**
 * Adds `requestId` to the annotations of every line logged while a request is served. It is read
 * from the logging fiber's own state when a line is written, so that serving a request that logs
 * nothing costs nothing.
 */
export const withRequestId = <M, O>(logger: Logger.Logger<M, O>): Logger.Logger<M, O> =>
  Logger.mapInputOptions(logger, (options) => {
    const id = FiberRefs.getOrDefault(options.context, currentRequestId)
    return id === undefined ? options : { ...options, annotations: HashMap.set(options.annotations, "requestId", id) }
  })
