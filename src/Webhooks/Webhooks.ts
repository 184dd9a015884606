import { Clock, Duration, Effect, Either, Option } from "effect"
import { CurrentKey } from "../Auth/CurrentKey.js"
import { AppConfig } from "../Config.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { defaultEventTypes, type EventEnvelope, type SubscribableEventType } from "../Domain/Event.js"
import { makeId, type SurveyId } from "../Domain/Ids.js"
import { toIso } from "../Domain/Time.js"
import { afterRotation, honouredSecrets, previousSecretsExpireAt, secretOverlapMillis } from "../Domain/Webhook.js"
import { Transactions } from "../Sql/Transactions.js"
import { SurveyAccess } from "../Surveys/SurveyAccess.js"
import { attemptOnce } from "./Attempt.js"
import { healthMove } from "./Health.js"
import { firstFree, intervalMillis, madeFrom } from "./Rate.js"
import { eventRetention, Redelivery } from "./Redelivery.js"
import type { WebhookScope } from "./RedeliveryRepo.js"
import { Signer } from "./Signer.js"
import { DNS_LOOKUP_TIMEOUT, parseTarget, resolveTarget } from "./UrlPolicy.js"
import { type LoggedAttempt, type NewAttempt, WebhookRepo } from "./WebhookRepo.js"

export type { WebhookScope } from "./RedeliveryRepo.js"

/** What a registration asks for (api-v1 §4.6). */
export interface WebhookInput {
  readonly targetUrl: string
  readonly events?: ReadonlyArray<SubscribableEventType> | undefined
  readonly maxAttemptsPerSecond?: number | null | undefined
}

/** The window of a recovery (v1-extensions §X1.3). */
export interface RecoveryInput {
  readonly since: string
  readonly until?: string | undefined
}

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

const registerFirst = (scope: WebhookScope, verb: string) => {
  const put = scope.surveyId === null ? "PUT /webhooks" : `PUT /surveys/${scope.surveyId}/webhook`
  const none = scope.surveyId === null ? "No workspace webhook is configured" : "This survey has no webhook"
  return new InvalidRequest({ message: `${none}; ${put} ${verb}.` })
}

/**
 * The webhooks of a workspace and of its surveys (api-v1 §4.6, §4.7, v1-extensions §X1, §X5):
 * registration with its URL policy, the settings as read, test events in the webhook's rate,
 * secret rotation, redelivery and recovery, enabling again and removal. Each change of a
 * webhook is one transaction that first locks its scope, so that two changes of one scope take
 * turns.
 */
export class Webhooks extends Effect.Service<Webhooks>()("Webhooks/Webhooks", {
  effect: Effect.gen(function*() {
    const transactions = yield* Transactions
    const repo = yield* WebhookRepo
    const redelivery = yield* Redelivery
    const signer = yield* Signer
    const access = yield* SurveyAccess
    const config = yield* AppConfig


    /** The scope of a survey's webhook, once the key may see the survey. */
    const surveyScope = (id: SurveyId) =>
      Effect.map(access.require(id), (survey): WebhookScope => ({ workspaceId: survey.workspaceId, surveyId: survey.id }))

    /** The scope of the workspace webhook: closed to survey-limited keys (api-v1 §5). */
    const workspaceScope = Effect.flatMap(CurrentKey, (key) =>
      key.surveyIds === null
        ? Effect.succeed<WebhookScope>({ workspaceId: key.workspaceId, surveyId: null })
        : Effect.fail(
          new Forbidden({ message: "This API key is limited to specific surveys; workspace webhooks need a workspace key." })
        ))

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

    /**
     * Registers or replaces the scope's webhook with a new secret, the event types it receives
     * and its rate. A disabled webhook is enabled again, with a clean record of failures; secrets
     * replaced by rotations are no longer honoured.
     */
    const register = Effect.fn("Webhooks.register")(function*(scope: WebhookScope, input: WebhookInput) {
      const targetUrl = yield* checkTarget(input.targetUrl)
      const secret = yield* signer.newSecret
      const events = input.events ?? defaultEventTypes
      const maxAttemptsPerSecond = input.maxAttemptsPerSecond ?? null
      const now = yield* Clock.currentTimeMillis
      yield* transactions.withinOrDie(Effect.gen(function*() {
        yield* repo.lockScope(scope)
        const existing = yield* repo.stored(scope)
        const id = Option.isSome(existing)
          ? yield* Effect.as(repo.replace({ id: existing.value.id, targetUrl, secret, maxAttemptsPerSecond, now }), existing.value.id)
          : yield* repo.insert({ scope, targetUrl, secret, maxAttemptsPerSecond, now })
        yield* repo.setEventTypes(id, events)
      }))
      return { enabled: true, targetUrl, signingSecret: secret, events, disabledReason: null }
    })

    /** The scope's webhook as every GET answers it: never the secret. */
    const settings = Effect.fn("Webhooks.settings")(function*(scope: WebhookScope) {
      const found = yield* repo.find(scope.workspaceId, scope.surveyId)
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
    const enabledWebhook = (scope: WebhookScope) =>
      Effect.gen(function*() {
        const found = yield* repo.find(scope.workspaceId, scope.surveyId)
        if (Option.isNone(found)) return yield* registerFirst(scope, "first")
        if (Option.isSome(found.value.disabledReason)) {
          const enable = scope.surveyId === null ? "POST /webhooks/enable" : `POST /surveys/${scope.surveyId}/webhook/enable`
          return yield* new InvalidRequest({
            message: `The webhook was disabled (${found.value.disabledReason.value}); ${enable} enables it again.`
          })
        }
        return found.value
      })

    /**
     * v1-extensions §X1.4a: a disabled webhook delivers again with its secrets, event types and
     * rate as they are, and a clean record of failures; 400 without one.
     */
    const enable = Effect.fn("Webhooks.enable")(function*(scope: WebhookScope) {
      const now = yield* Clock.currentTimeMillis
      const found = yield* transactions.withinOrDie(Effect.gen(function*() {
        yield* repo.lockScope(scope)
        const existing = yield* repo.stored(scope)
        if (Option.isNone(existing)) return false
        const reason = existing.value.disabledReason
        if (reason === null) return true
        yield* repo.reenable(existing.value.id, now)
        yield* Effect.logInfo("webhook enabled").pipe(
          Effect.annotateLogs({ webhookId: existing.value.id, surveyId: scope.surveyId ?? "", wasDisabled: reason })
        )
        return true
      }))
      if (!found) return yield* registerFirst(scope, "registers one")
      return yield* settings(scope)
    })

    /** Removes the scope's webhook; its pending deliveries end unsent. Nothing when it has none. */
    const remove = Effect.fn("Webhooks.remove")(function*(scope: WebhookScope) {
      yield* transactions.withinOrDie(Effect.gen(function*() {
        yield* repo.lockScope(scope)
        const existing = yield* repo.stored(scope)
        if (Option.isNone(existing)) return
        yield* repo.remove(existing.value.id)
        yield* Effect.logInfo("webhook removed").pipe(
          Effect.annotateLogs({ webhookId: existing.value.id, surveyId: scope.surveyId ?? "" })
        )
      }))
    })

    /**
     * Takes the next free slot of a rated webhook's delivery rate for one attempt made outside
     * the worker, and waits until the attempt may be made in it (v1-extensions §X5.3,
     * src/Webhooks/Rate.ts).
     */
    const waitForSlot = (webhookId: Parameters<typeof repo.nextSlot>[0], perSecond: number) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const slot = yield* transactions.withinOrDie(Effect.gen(function*() {
          const taken = firstFree(yield* repo.nextSlot(webhookId), now)
          yield* repo.setNextSlot(webhookId, taken + intervalMillis(perSecond))
          return taken
        }))
        const wait = madeFrom(slot, perSecond) - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
      })

    /** One signed `webhook.test` attempt (api-v1 §4.7, v1-extensions §X1.6), logged; never filtered. */
    const sendTest = Effect.fn("Webhooks.sendTest")(function*(scope: WebhookScope) {
      const webhook = yield* enabledWebhook(scope)
      // A test event takes its turn in the webhook's delivery rate like any attempt (v1-extensions §X5.3).
      if (webhook.maxAttemptsPerSecond !== null) yield* waitForSlot(webhook.id, webhook.maxAttemptsPerSecond)
      const now = yield* Clock.currentTimeMillis
      const event: EventEnvelope = {
        id: makeId("evt"),
        type: "webhook.test",
        timestamp: toIso(now),
        formId: scope.surveyId,
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
      const attempt: NewAttempt = {
        deliveryId: null,
        scope: scope.surveyId === null ? "workspace" : "survey",
        workspaceId: scope.workspaceId,
        surveyId: scope.surveyId,
        eventId: event.id,
        eventType: event.type,
        ok: outcome.ok,
        responseStatus: outcome.responseStatus,
        error: outcome.error,
        attemptedAt: now
      }
      yield* transactions.withinOrDie(repo.recordOutcome(webhook.id, attempt, healthMove(attempt)))
      return { delivered: outcome.ok }
    })

    /**
     * v1-extensions §X5.2: a new secret, the one the client chose or else a random one; the
     * replaced one stays honoured for 24 hours.
     */
    const rotateSecret = Effect.fn("Webhooks.rotateSecret")(function*(scope: WebhookScope, chosen: string | undefined) {
      yield* enabledWebhook(scope)
      const secret = chosen ?? (yield* signer.newSecret)
      const now = yield* Clock.currentTimeMillis
      const rotated = yield* transactions.withinOrDie(Effect.gen(function*() {
        yield* repo.lockScope(scope)
        const existing = yield* repo.stored(scope)
        // Removed or disabled since it was read above: nothing is rotated.
        if (Option.isNone(existing) || existing.value.disabledReason !== null) return false
        const previous = afterRotation(existing.value.secret, existing.value.previousSecrets, now)
        yield* repo.setSecret(existing.value.id, secret, previous, now)
        return true
      }))
      if (!rotated) {
        return yield* new InvalidRequest({ message: "The webhook was removed or disabled meanwhile; nothing was rotated." })
      }
      return { secret, previousSecretExpiresAt: toIso(now + secretOverlapMillis) }
    })

    /** v1-extensions §X1.2: the event must be of the scope and at most 30 days old; then the webhook must be enabled. */
    const redeliver = Effect.fn("Webhooks.redeliver")(function*(scope: WebhookScope, eventId: string) {
      const now = yield* Clock.currentTimeMillis
      const event = yield* redelivery.event(scope, eventId, now)
      if (Option.isNone(event)) {
        return yield* new NotFound({
          message: `No event ${JSON.stringify(eventId.slice(0, 64))} of this ${
            scope.surveyId === null ? "workspace" : "survey"
          } in the last 30 days.`
        })
      }
      const webhook = yield* enabledWebhook(scope)
      const queued = yield* redelivery.redeliver({ webhookId: webhook.id, event: event.value, now })
      return { eventId: event.value.id, queued }
    })

    /** v1-extensions §X1.3: a window of at most the last 30 days, `since` before `until`. */
    const recover = Effect.fn("Webhooks.recover")(function*(scope: WebhookScope, window: RecoveryInput) {
      const now = yield* Clock.currentTimeMillis
      const until = window.until ?? toIso(now)
      const oldest = toIso(now - Duration.toMillis(eventRetention))
      const invalid = (path: string, message: string) =>
        new InvalidRequest({ message: `Invalid \`${path}\`: ${message}.`, issues: [{ path, message }] })
      if (window.since < oldest) {
        return yield* invalid("since", `must not be more than 30 days ago (${oldest} or later)`)
      }
      if (window.since >= until) return yield* invalid("since", "must be before `until`")
      const webhook = yield* enabledWebhook(scope)
      const queued = yield* redelivery.recover({ webhookId: webhook.id, scope, since: window.since, until, now })
      return { queued }
    })

    /** The scope's delivery log, newest first: 25 attempts unless told. */
    const attempts = Effect.fn("Webhooks.attempts")(function*(scope: WebhookScope, limit: number | undefined) {
      const rows = yield* repo.attempts(scope, limit ?? 25)
      return { data: rows.map(toAttempt) }
    })

    return {
      surveyScope,
      workspaceScope,
      register,
      settings,
      enable,
      remove,
      sendTest,
      rotateSecret,
      redeliver,
      recover,
      attempts
    } as const
  })
}) {}
