import { HttpApiBuilder, HttpApiError, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { Api } from "../Api.js"
import { InvalidRequest } from "../Domain/Errors.js"
import type { SurveyId } from "../Domain/Ids.js"
import { toInvalidRequest } from "../Http/RequestErrors.js"
import { SecretRotation } from "./Api.js"
import { Webhooks, type WebhookScope } from "./Webhooks.js"

/**
 * The optional body of a rotation, read here: an endpoint's payload decoding refuses an empty
 * body. Answers the secret the client chose, none when the body is empty.
 */
const chosenSecret = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const text = yield* Effect.orElseSucceed(request.text, () => "")
  if (text.trim() === "") return undefined
  const parsed = yield* Effect.try((): unknown => JSON.parse(text)).pipe(
    Effect.mapError(() =>
      new InvalidRequest({
        message: "The request body is not valid JSON.",
        issues: [{ path: "", message: "expected a JSON body" }]
      })
    )
  )
  const body = yield* Schema.decodeUnknown(SecretRotation, { errors: "all" })(parsed).pipe(
    Effect.catchTag("ParseError", (error) =>
      Effect.flatMap(HttpApiError.HttpApiDecodeError.fromParseError(error), (decodeError) =>
        Effect.fail(toInvalidRequest(decodeError))))
  )
  return body.secret
})

const SurveyWebhookLive = HttpApiBuilder.group(Api, "surveyWebhook", (handlers) =>
  Effect.map(Webhooks, (webhooks) => {
    const scoped = <A, E, R>(id: SurveyId, run: (scope: WebhookScope) => Effect.Effect<A, E, R>) =>
      Effect.flatMap(webhooks.surveyScope(id), run)
    return handlers
      .handle("get", ({ path }) => scoped(path.id, webhooks.settings))
      .handle("put", ({ path, payload }) => scoped(path.id, (scope) => webhooks.register(scope, payload)))
      .handle("deliveries", ({ path, urlParams }) => scoped(path.id, (scope) => webhooks.attempts(scope, urlParams.limit)))
      .handle("delete", ({ path }) => scoped(path.id, webhooks.remove))
      .handle("enable", ({ path }) => scoped(path.id, webhooks.enable))
      .handle("test", ({ path }) => scoped(path.id, webhooks.sendTest))
      .handle("rotateSecret", ({ path }) =>
        scoped(path.id, (scope) => Effect.flatMap(chosenSecret, (chosen) => webhooks.rotateSecret(scope, chosen))))
      .handle("redeliver", ({ path }) => scoped(path.id, (scope) => webhooks.redeliver(scope, path.eventId)))
      .handle("recover", ({ path, payload }) => scoped(path.id, (scope) => webhooks.recover(scope, payload)))
  }))

const WorkspaceWebhooksLive = HttpApiBuilder.group(Api, "workspaceWebhooks", (handlers) =>
  Effect.map(Webhooks, (webhooks) => {
    const scoped = <A, E, R>(run: (scope: WebhookScope) => Effect.Effect<A, E, R>) =>
      Effect.flatMap(webhooks.workspaceScope, run)
    return handlers
      .handle("get", () => scoped(webhooks.settings))
      .handle("put", ({ payload }) => scoped((scope) => webhooks.register(scope, payload)))
      .handle("delete", () => scoped(webhooks.remove))
      .handle("enable", () => scoped(webhooks.enable))
      .handle("test", () => scoped(webhooks.sendTest))
      .handle("rotateSecret", () => scoped((scope) => Effect.flatMap(chosenSecret, (chosen) => webhooks.rotateSecret(scope, chosen))))
      .handle("redeliver", ({ path }) => scoped((scope) => webhooks.redeliver(scope, path.eventId)))
      .handle("recover", ({ payload }) => scoped((scope) => webhooks.recover(scope, payload)))
      .handle("deliveries", ({ urlParams }) => scoped((scope) => webhooks.attempts(scope, urlParams.limit)))
  }))

/** Handlers of api-v1 §4.6 and §4.7: each maps its request onto the webhooks service. */
export const WebhooksHttpLive = Layer.mergeAll(SurveyWebhookLive, WorkspaceWebhooksLive)
