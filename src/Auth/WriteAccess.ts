import { HttpApiMiddleware, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { Forbidden } from "../Domain/Errors.js"
import { canWrite, CurrentKey } from "./CurrentKey.js"

/**
 * Every call but a GET is a write (api-v1 §5) and needs a key whose creator may edit. Runs
 * inside `Authorization`, which provides the key, and before the body is read, so a read-only
 * key is refused the same way whatever it sends.
 */
export class WriteAccess extends HttpApiMiddleware.Tag<WriteAccess>()("Auth/WriteAccess", {
  failure: Forbidden.Wire
}) {}

export const WriteAccessLive = Layer.succeed(
  WriteAccess,
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (request.method === "GET" || request.method === "HEAD") return
    const key = yield* Effect.serviceOption(CurrentKey)
    if (Option.isNone(key)) return yield* Effect.dieMessage("WriteAccess must run inside Authorization")
    if (!canWrite(key.value)) {
      return yield* new Forbidden({ message: "This API key is read-only; writes need a key created by an editor or owner." })
    }
  })
)
