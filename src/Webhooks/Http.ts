import { HttpApiBuilder, HttpApiError, HttpServerRequest } from "@effect/platform"
import { Clock, Duration, Effect, Either, Layer, Option, Schema } from "effect"
import { Api } from "../Api.js"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { AppConfig } from "../Config.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { makeId, type SurveyId, type WorkspaceId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { defaultEventTypes, type EventEnvelope } from "../Domain/Event.js"
import { honouredSecrets, previousSecretsExpireAt, secretOverlapMillis } from "../Domain/Webhook.js"
import { toInvalidRequest } from "../Http/RequestErrors.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { type RecoveryWindow, SecretRotation, type WebhookTarget } from "./Api.js"
import { attemptOnce } from "./Attempt.js"
import { madeFrom } from "./Rate.js"
import { eventRetention, Redelivery } from "./Redelivery.js"
import type { WebhookScope } from "./RedeliveryRepo.js"
import { Signer } from "./Signer.js"
import { DNS_LOOKUP_TIMEOUT, parseTarget, resolveTarget } from "./UrlPolicy.js"
import { type LoggedAttempt, WebhookRepo } from "./WebhookRepo.js"

/** Workspace webhook endpoints are closed to survey-limited keys (api-v1 §5). */
const requireWorkspaceKey = Effect.gen(function*() {
  const key = yield* CurrentKey
  if (key.surveyIds !== null) {
    return yield* new Forbidden({ message: "This API key is limited to specific surveys; workspace webhooks need a workspace key." })
  }
  return key
})

const toAttempt = (row: LoggedAttempt) => ({
  id: row.id,
  eventId: row.eventId,
  eventType: row.eventType,
  surveyId: row.surveyId,
  ok: row.ok,
  responseStatus: row.responseStatus,
  error: row.error,
  attemptedAt: toIso(row.attemptedAt)
})

/** The settings of a scope without a webhook. */
const unconfigured = {
  enabled: false, targetUrl: null, events: [], disabledReason: null, previousSecretExpiresAt: null, maxAttemptsPerSecond: null
} as const

/** Handlers of api-v1 §4.6 and §4.7. */
export const WebhooksHttpLive = Layer.unwrapEffect(Effect.gen(function*() {
  const repo = yield* WebhookRepo
  const redelivery = yield* Redelivery
  const signer = yield* Signer
  const config = yield* AppConfig

  /** The URL policy at registration: syntax, then every address the host resolves to. */
  const checkTarget = (input: string) =>
    Effect.gen(function*() {
      const invalid = (message: string) =>
        new InvalidRequest({ message: `Invalid \`targetUrl\`: ${message}.`, issues: [{ path: "targetUrl", message }] })
      const parsed = parseTarget(input, config.webhookAllowPrivateTargets)
      if (Either.isLeft(parsed)) return yield* invalid(parsed.left)
      yield* resolveTarget(parsed.right, config.webhookAllowPrivateTargets, DNS_LOOKUP_TIMEOUT).pipe(Effect.mapError(invalid))
      return parsed.right.url.href
    })

  const register = (workspaceId: WorkspaceId, surveyId: SurveyId | null, input: typeof WebhookTarget.Type) =>
    Effect.gen(function*() {
      const targetUrl = yield* checkTarget(input.targetUrl)
      const secret = yield* signer.newSecret
      const events = input.events ?? defaultEventTypes
      const maxAttemptsPerSecond = input.maxAttemptsPerSecond ?? null
      const now = yield* Clock.currentTimeMillis
      yield* repo.put({ workspaceId, surveyId, targetUrl, secret, events, maxAttemptsPerSecond, now })
      return { enabled: true, targetUrl, signingSecret: secret, events, disabledReason: null }
    })

  const settings = (workspaceId: WorkspaceId, surveyId: SurveyId | null) =>
    Effect.gen(function*() {
      const found = yield* repo.find(workspaceId, surveyId)
      const now = yield* Clock.currentTimeMillis
      return Option.match(found, {
        onNone: () => unconfigured,
        onSome: (webhook) => {
          const expiresAt = previousSecretsExpireAt(webhook.previousSecrets, now)
          return {
            enabled: webhook.enabled,
            targetUrl: webhook.targetUrl,
            events: webhook.events,
            disabledReason: Option.getOrNull(webhook.disabledReason),
            previousSecretExpiresAt: expiresAt === null ? null : toIso(expiresAt),
            maxAttemptsPerSecond: webhook.maxAttemptsPerSecond
          }
        }
      })
    })

  /** The scope's webhook when it is configured and enabled; else 400, as the operations on it need. */
  const enabledWebhook = (workspaceId: WorkspaceId, surveyId: SurveyId | null) =>
    Effect.gen(function*() {
      const found = yield* repo.find(workspaceId, surveyId)
      const put = surveyId === null ? "PUT /webhooks" : `PUT /surveys/${surveyId}/webhook`
      const none = surveyId === null ? "No workspace webhook is configured" : "This survey has no webhook"
      if (Option.isNone(found)) {
        return yield* new InvalidRequest({ message: `${none}; ${put} first.` })
      }
      if (Option.isSome(found.value.disabledReason)) {
        const enable = surveyId === null ? "POST /webhooks/enable" : `POST /surveys/${surveyId}/webhook/enable`
        return yield* new InvalidRequest({
          message: `The webhook was disabled (${found.value.disabledReason.value}); ${enable} enables it again.`
        })
      }
      return found.value
    })

  /** v1-extensions §X1.4a: a disabled webhook delivers again with its secret, events and rate; 400 without one. */
  const enable = (workspaceId: WorkspaceId, surveyId: SurveyId | null) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const found = yield* repo.enable({ workspaceId, surveyId, now })
      if (Option.isNone(found)) {
        const put = surveyId === null ? "PUT /webhooks" : `PUT /surveys/${surveyId}/webhook`
        const none = surveyId === null ? "No workspace webhook is configured" : "This survey has no webhook"
        return yield* new InvalidRequest({ message: `${none}; ${put} registers one.` })
      }
      return yield* settings(workspaceId, surveyId)
    })

  /** One signed `webhook.test` attempt (api-v1 §4.7, v1-extensions §X1.6), logged; never filtered. */
  const sendTest = (workspaceId: WorkspaceId, surveyId: SurveyId | null) =>
    Effect.gen(function*() {
      const webhook = yield* enabledWebhook(workspaceId, surveyId)
      // A test event takes its turn in the webhook's delivery rate like any attempt (v1-extensions §X5.3).
      if (webhook.maxAttemptsPerSecond !== null) {
        const slot = yield* repo.takeSlot(webhook.id, webhook.maxAttemptsPerSecond, yield* Clock.currentTimeMillis)
        const wait = madeFrom(slot, webhook.maxAttemptsPerSecond) - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
      }
      const now = yield* Clock.currentTimeMillis
      const event: EventEnvelope = {
        id: makeId("evt"),
        type: "webhook.test",
        timestamp: toIso(now),
        formId: surveyId,
        data: {}
      }
      const outcome = yield* attemptOnce({
        targetUrl: webhook.targetUrl,
        secrets: honouredSecrets(webhook.secret, webhook.previousSecrets, now),
        eventId: event.id,
        body: JSON.stringify(event)
      })
      if (!outcome.ok) {
        yield* Effect.logWarning("webhook test event not delivered").pipe(
          Effect.annotateLogs({ webhookId: webhook.id, error: outcome.error ?? "" })
        )
      }
      yield* repo.logOutcome(webhook.id, {
        deliveryId: null,
        scope: surveyId === null ? "workspace" : "survey",
        workspaceId,
        surveyId,
        eventId: event.id,
        eventType: event.type,
        ok: outcome.ok,
        responseStatus: outcome.responseStatus,
        error: outcome.error,
        attemptedAt: now
      })
      return { delivered: outcome.ok }
    })

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

  /** v1-extensions §X5.2: a new secret, the replaced one honoured for 24 hours. */
  const rotateSecret = (workspaceId: WorkspaceId, surveyId: SurveyId | null) =>
    Effect.gen(function*() {
      const chosen = yield* chosenSecret
      yield* enabledWebhook(workspaceId, surveyId)
      const secret = chosen ?? (yield* signer.newSecret)
      const now = yield* Clock.currentTimeMillis
      const rotated = yield* repo.rotate({ workspaceId, surveyId, secret, now })
      if (Option.isNone(rotated)) {
        return yield* new InvalidRequest({ message: "The webhook was removed or disabled meanwhile; nothing was rotated." })
      }
      return { secret, previousSecretExpiresAt: toIso(now + secretOverlapMillis) }
    })

  /** v1-extensions §X1.2: the event must be of the scope and at most 30 days old; then the webhook must be enabled. */
  const redeliver = (scope: WebhookScope, eventId: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const event = yield* redelivery.event(scope, eventId, now)
      if (Option.isNone(event)) {
        return yield* new NotFound({
          message: `No event ${JSON.stringify(eventId.slice(0, 64))} of this ${
            scope.surveyId === null ? "workspace" : "survey"
          } in the last 30 days.`
        })
      }
      const webhook = yield* enabledWebhook(scope.workspaceId, scope.surveyId)
      const queued = yield* redelivery.redeliver({ webhookId: webhook.id, event: event.value, now })
      return { eventId: event.value.id, queued }
    })

  /** v1-extensions §X1.3: a window of at most the last 30 days, `since` before `until`. */
  const recover = (scope: WebhookScope, window: typeof RecoveryWindow.Type) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const until = window.until ?? toIso(now)
      const oldest = toIso(now - Duration.toMillis(eventRetention))
      const invalid = (path: string, message: string) =>
        new InvalidRequest({ message: `Invalid \`${path}\`: ${message}.`, issues: [{ path, message }] })
      if (window.since < oldest) {
        return yield* invalid("since", `must not be more than 30 days ago (${oldest} or later)`)
      }
      if (window.since >= until) return yield* invalid("since", "must be before `until`")
      const webhook = yield* enabledWebhook(scope.workspaceId, scope.surveyId)
      const queued = yield* redelivery.recover({ webhookId: webhook.id, scope, since: window.since, until, now })
      return { queued }
    })

  const log = (workspaceId: string, surveyId: string | null, limit: number | undefined) =>
    Effect.map(repo.attempts({ workspaceId, surveyId }, limit ?? 25), (rows) => ({ data: rows.map(toAttempt) }))

  const SurveyWebhookLive = HttpApiBuilder.group(Api, "surveyWebhook", (handlers) =>
    Effect.gen(function*() {
      const access = yield* SurveyAccess
      return handlers
        .handle("get", ({ path }) =>
          Effect.flatMap(access.require(path.id), (survey) => settings(survey.workspaceId, survey.id)))
        .handle("put", ({ path, payload }) =>
          Effect.gen(function*() {
            const survey = yield* access.require(path.id)
            return yield* register(survey.workspaceId, survey.id, payload)
          }))
        .handle("deliveries", ({ path, urlParams }) =>
          Effect.flatMap(access.require(path.id), (survey) => log(survey.workspaceId, survey.id, urlParams.limit)))
        .handle("delete", ({ path }) =>
          Effect.flatMap(access.require(path.id), (survey) => Effect.asVoid(repo.remove(survey.workspaceId, survey.id))))
        .handle("enable", ({ path }) => Effect.flatMap(access.require(path.id), (survey) => enable(survey.workspaceId, survey.id)))
        .handle("test", ({ path }) =>
          Effect.gen(function*() {
            const survey = yield* access.require(path.id)
            return yield* sendTest(survey.workspaceId, survey.id)
          }))
        .handle("rotateSecret", ({ path }) =>
          Effect.flatMap(access.require(path.id), (survey) => rotateSecret(survey.workspaceId, survey.id)))
        .handle("redeliver", ({ path }) =>
          Effect.flatMap(
            access.require(path.id),
            (survey) => redeliver({ workspaceId: survey.workspaceId, surveyId: survey.id }, path.eventId)
          ))
        .handle("recover", ({ path, payload }) =>
          Effect.flatMap(
            access.require(path.id),
            (survey) => recover({ workspaceId: survey.workspaceId, surveyId: survey.id }, payload)
          ))
    }))

  const WorkspaceWebhooksLive = HttpApiBuilder.group(Api, "workspaceWebhooks", (handlers) =>
    Effect.succeed(
      handlers
        .handle("get", () => Effect.flatMap(requireWorkspaceKey, (key) => settings(key.workspaceId, null)))
        .handle("put", ({ payload }) =>
          Effect.gen(function*() {
            const key = yield* requireWorkspaceKey
            return yield* register(key.workspaceId, null, payload)
          }))
        .handle("delete", () =>
          Effect.gen(function*() {
            const key = yield* requireWorkspaceKey
            yield* repo.remove(key.workspaceId, null)
          }))
        .handle("enable", () => Effect.flatMap(requireWorkspaceKey, (key) => enable(key.workspaceId, null)))
        .handle("test", () =>
          Effect.gen(function*() {
            const key = yield* requireWorkspaceKey
            return yield* sendTest(key.workspaceId, null)
          }))
        .handle("rotateSecret", () => Effect.flatMap(requireWorkspaceKey, (key) => rotateSecret(key.workspaceId, null)))
        .handle("redeliver", ({ path }) =>
          Effect.flatMap(requireWorkspaceKey, (key) => redeliver({ workspaceId: key.workspaceId, surveyId: null }, path.eventId)))
        .handle("recover", ({ payload }) =>
          Effect.flatMap(requireWorkspaceKey, (key) => recover({ workspaceId: key.workspaceId, surveyId: null }, payload)))
        .handle("deliveries", ({ urlParams }) =>
          Effect.flatMap(requireWorkspaceKey, (key) => log(key.workspaceId, null, urlParams.limit)))
    ))

  return Layer.mergeAll(SurveyWebhookLive, WorkspaceWebhooksLive)
}))
