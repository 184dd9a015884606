import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { Drain } from "../Background/Drain.js"
import { DatabaseReadiness } from "../Sql/DatabaseReadiness.js"

/** The readiness probe's path: answered while the process drains, unlike every other route. */
export const READINESS_PATH = "/readyz"

/** Whether `request` is the readiness probe (a drain still answers it). */
export const isReadinessProbe = (request: HttpServerRequest.HttpServerRequest): boolean =>
  request.url === READINESS_PATH || request.url.startsWith(`${READINESS_PATH}?`)

const notReady = (reason: "database" | "migrations" | "draining") =>
  HttpServerResponse.unsafeJson({ status: "not_ready", reason }, { status: 503 })

/**
 * `GET /readyz` (v1-extensions §X6): 200 when the database answers within a second with every
 * migration this binary knows applied and the process is not draining; else 503 with the reason.
 * A draining process answers without asking the database.
 */
export const ReadinessLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const drain = yield* Drain
    const database = yield* DatabaseReadiness
    yield* router.get(
      READINESS_PATH,
      Effect.suspend(() =>
        drain.isDraining()
          ? Effect.succeed(notReady("draining"))
          : Effect.map(
            database.check,
            Option.match({
              onNone: () => drain.isDraining() ? notReady("draining") : HttpServerResponse.unsafeJson({ status: "ready" }),
              onSome: notReady
            })
          )
      )
    )
  })
).pipe(Layer.provide(DatabaseReadiness.Default))
