import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { WebhookBackgroundLive } from "../../src/App.js"
import type { AppSettings } from "../../src/Config.js"
import { Outbox } from "../../src/Events/Outbox.js"
import { WebhookRegistered } from "../../src/Webhooks/Api.js"
import { DeliverySettings } from "../../src/Webhooks/DeliverySettings.js"
import type { Signer } from "../../src/Webhooks/Signer.js"
import { baseFixture, TOKENS } from "./Fixtures.js"
import { bodyOf, call, TestServer } from "./TestServer.js"

type Settings = typeof DeliverySettings.Service

/** The HTTP API and the webhook workers over one in-memory database seeded with the base fixture. */
export const WebhookWorld = (
  settings: Partial<Settings> = {},
  signer?: Layer.Layer<Signer>,
  app: Partial<AppSettings> = {}
) =>
  TestServer(baseFixture, app, { background: WebhookBackgroundLive, ...(signer === undefined ? {} : { signer }) }).pipe(
    Layer.provide(Layer.succeed(DeliverySettings, { ...DeliverySettings.defaultValue(), ...settings }))
  )

/** Registers a webhook through the API and answers its signing secret. */
export const register = (targetUrl: string, surveyId?: string, token: string = TOKENS.editor) =>
  Effect.gen(function*() {
    const path = surveyId === undefined ? "/api/v1/webhooks" : `/api/v1/surveys/${surveyId}/webhook`
    const res = yield* call("PUT", path, { token, body: JSON.stringify({ targetUrl }) })
    if (res.status !== 200) return yield* Effect.dieMessage(`PUT ${path} answered ${res.status}: ${res.text}`)
    const body = bodyOf(WebhookRegistered, res)
    return body.signingSecret
  })

/** Writes a `response.completed` event the way a completion does: in a transaction, through the outbox. */
export const complete = (surveyId: string, workspaceId = "ws_a", responseId = "rsp_1") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* Outbox
    return yield* sql.withTransaction(outbox.append({
      type: "response.completed",
      workspaceId,
      surveyId,
      data: { responseId, externalUserId: null }
    })).pipe(Effect.orDie)
  })

export interface LoggedAttempt {
  readonly eventId: string
  readonly scope: string
  readonly ok: number
  readonly responseStatus: number | null
  readonly error: string | null
  readonly attemptedAt: number
}

/** Every logged attempt, oldest first. */
export const loggedAttempts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<LoggedAttempt>`SELECT event_id, scope, ok, response_status, error, attempted_at
    FROM delivery_attempts ORDER BY attempted_at, rowid`.pipe(Effect.orDie)
})

export interface DeliveryState {
  readonly id: number
  readonly state: string
  readonly attempts: number
  readonly nextAttemptAt: number
  readonly leaseUntil: number
}

export const deliveries = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<DeliveryState>`SELECT id, state, attempts, next_attempt_at, lease_until FROM deliveries ORDER BY id`
    .pipe(Effect.orDie)
})
