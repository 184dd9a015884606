import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi, OpenApiJsonSchema } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../Auth/Authorization.js"
import { WriteAccess } from "../Auth/WriteAccess.js"
import { Forbidden, InvalidRequest, NotFound } from "../Domain/Errors.js"
import { boundedInt, boundedString, Count, IdText, MAX_URL_LENGTH, Timestamp, UrlText } from "../Domain/Bounds.js"
import {
  DisabledReason,
  EventFilter,
  MAX_SIGNING_SECRET_LENGTH,
  MaxAttemptsPerSecond,
  SigningSecret
} from "../Domain/Webhook.js"
import { SubscribableEventType } from "../Domain/Event.js"
import { Limit, MAX_PAGE_SIZE } from "../Domain/Page.js"
import { IsoInstant } from "../Domain/Time.js"
import { acceptsUnknownFields, JsonBody } from "../Http/JsonBody.js"
import { SurveyIdParam } from "../Surveys/Api.js"

const events = Schema.Array(SubscribableEventType).pipe(Schema.maxItems(SubscribableEventType.literals.length)).annotations({
  description: "Event types the webhook receives; `[]` when no webhook is configured. `webhook.test` is always sent."
})

const disabledReason = Schema.NullOr(DisabledReason).annotations({
  description: "Why the webhook was switched off (`enabled` is then false and `targetUrl` kept); null unless disabled."
})

const previousSecretExpiresAt = Schema.NullOr(Timestamp).annotations({
  description:
    "Until when deliveries are also signed with secrets replaced by a rotation (the last one's 24 hours); null when none is honoured."
})

const maxAttemptsPerSecond = Schema.NullOr(MaxAttemptsPerSecond).annotations({
  description: "Attempts per second at most; attempts beyond it wait their turn. Null: no limit."
})

/** Webhook settings (api-v1 §2.6) as every GET answers them: never the secret. */
export const WebhookSettings = Schema.Struct({
  enabled: Schema.Boolean.annotations({ description: "Whether a webhook is configured and not disabled." }),
  targetUrl: Schema.NullOr(UrlText).annotations({ description: "Receiving URL; null when none is configured." }),
  events,
  disabledReason,
  previousSecretExpiresAt,
  maxAttemptsPerSecond
}).annotations({ identifier: "WebhookSettings" })

/** The answer of a PUT: the only place the new signing secret ever appears. */
export const WebhookRegistered = Schema.Struct({
  enabled: Schema.Boolean,
  targetUrl: UrlText,
  signingSecret: boundedString(MAX_SIGNING_SECRET_LENGTH).annotations({
    description: "Standard Webhooks secret (`whsec_` + base64). Shown only in this answer; each PUT rotates it."
  }),
  events,
  disabledReason
}).annotations({ identifier: "WebhookRegistered" })

export const WebhookTarget = Schema.Struct({
  targetUrl: boundedString(MAX_URL_LENGTH, "uri").annotations({
    description: "Public HTTPS URL, at most 2,048 characters. Loopback, private, link-local and reserved hosts, and URLs with credentials, are refused."
  }),
  events: Schema.optional(EventFilter).annotations({
    description:
      "Event types to receive. Omitted: `[\"response.completed\", \"survey.published\", \"survey.closed\"]`. Unknown, repeated or empty: 400."
  }),
  maxAttemptsPerSecond: Schema.optional(maxAttemptsPerSecond)
}).annotations({ identifier: "WebhookTarget", ...acceptsUnknownFields })

/** The optional body of a rotation (v1-extensions §X5.2); a field it does not name is refused. */
export const SecretRotation = Schema.Struct({
  secret: Schema.optional(SigningSecret).annotations({
    description: "`whsec_` + standard base64 of 24 to 64 random bytes."
  })
}).annotations({ identifier: "WebhookSecretRotation", parseOptions: { onExcessProperty: "error", errors: "all" } })

/** The answer of a rotation: with a PUT's, the only place a signing secret ever appears. */
export const SecretRotated = Schema.Struct({
  secret: boundedString(MAX_SIGNING_SECRET_LENGTH).annotations({
    description: "The new signing secret; deliveries are signed with it from now on."
  }),
  previousSecretExpiresAt: Timestamp.annotations({
    description: "Until when deliveries are also signed with the replaced secret (24 hours from now)."
  })
}).annotations({ identifier: "WebhookSecretRotated" })

const rotateDescription =
  "Replaces the signing secret with the one given (`whsec_` + base64 of 24 to 64 bytes) or, without a body, a new random one. For 24 hours every attempt also carries a signature with each replaced secret (at most the five most recent), newest first, so that receivers holding either secret verify. 400 when no enabled webhook is configured."

/**
 * The rotation's body is optional, which an endpoint's payload cannot say (its decoding refuses
 * an empty body): the handler reads it, and the document takes its schema from `SecretRotation`.
 */
const rotateDocs = (summary: string) =>
  OpenApi.annotations({
    summary,
    description: rotateDescription,
    override: {
      requestBody: {
        required: false,
        content: {
          "application/json": {
            schema: OpenApiJsonSchema.makeWithDefs(SecretRotation, { defs: {}, topLevelReferenceStrategy: "skip" })
          }
        }
      }
    }
  })

/** One delivery attempt (api-v1 §2.7); never the payload. */
export const DeliveryAttempt = Schema.Struct({
  id: IdText.annotations({ description: "Unique per attempt, not per event." }),
  eventId: IdText.annotations({ description: "Equals the payload `id` and the `x-service-event-id` header." }),
  eventType: boundedString(64),
  surveyId: Schema.NullOr(IdText).annotations({ description: "Null only for a workspace test event." }),
  ok: Schema.Boolean.annotations({ description: "True when the endpoint answered 2xx." }),
  responseStatus: Schema.NullOr(boundedInt(100, 999)).annotations({
    description: "The endpoint's HTTP status; null when no exchange happened (timeout, refused host, blocked redirect)."
  }),
  error: Schema.NullOr(boundedString(200)).annotations({ description: "One line, at most 200 characters; null on success." }),
  attemptedAt: Timestamp
}).annotations({ identifier: "DeliveryAttempt" })

export const DeliveryLog = Schema.Struct({ data: Schema.Array(DeliveryAttempt).pipe(Schema.maxItems(MAX_PAGE_SIZE)) }).annotations({
  identifier: "DeliveryLog"
})

export const WebhookTestResult = Schema.Struct({
  delivered: Schema.Boolean.annotations({
    description: "True when the endpoint answered 2xx; false on any other status, a refused connection or the 15 s timeout."
  })
}).annotations({ identifier: "WebhookTestResult" })

const EventId = HttpApiSchema.param(
  "eventId",
  IdText.annotations({ description: "An event id (`evt_…`), as in the payload and the delivery log." })
)

/** The answer of a redelivery (v1-extensions §X1.2). */
export const Redelivery = Schema.Struct({
  eventId: IdText,
  queued: Schema.Boolean.annotations({
    description: "False when a delivery of this event to this webhook was already pending or being attempted; nothing was added."
  })
}).annotations({ identifier: "WebhookRedelivery" })

/** The window to recover (v1-extensions §X1.3). */
export const RecoveryWindow = Schema.Struct({
  since: IsoInstant.annotations({ description: "Start of the window, inclusive; at most 30 days ago." }),
  until: Schema.optional(IsoInstant.annotations({ description: "End of the window, exclusive; default now." }))
}).annotations({ identifier: "WebhookRecoveryWindow", ...acceptsUnknownFields })

export const Recovery = Schema.Struct({
  queued: Count.annotations({ description: "Deliveries queued: events of the window not yet delivered nor pending." })
}).annotations({ identifier: "WebhookRecovery" })

const redeliverDescription =
  "Queues the event again for this webhook, whatever its event filter: the same payload bytes and event id, signed with the current secret at a fresh timestamp, first attempt at once and then the whole retry schedule. The event must be of this scope and at most 30 days old (else 404); 400 when no enabled webhook is configured."

const recoverDescription =
  "Queues one delivery for every event of the scope created in [since, until) whose type the webhook receives, that has no successful delivery in this scope's log and none pending, including events from before the webhook existed or while it was disabled. 400 when `since` is more than 30 days ago or not before `until`, or no enabled webhook is configured."

const LogParams = Schema.Struct({ limit: Schema.optional(Limit) })

const enableDescription =
  "Switches a webhook that was disabled (a 410 answer, or 5 days of failures) on again, with its signing secret, event filter and rate unchanged and a clean record of failures; `disabledReason` is then null. On an enabled webhook it changes nothing. Deliveries that ended while it was off are not sent by this: recover their window. 400 when no webhook is configured."

export class SurveyWebhookApi extends HttpApiGroup.make("surveyWebhook")
  .add(
    HttpApiEndpoint.get("get")`/surveys/${SurveyIdParam}/webhook`
      .addSuccess(WebhookSettings)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Read the survey's webhook (never the secret)")
  )
  .add(
    HttpApiEndpoint.put("put")`/surveys/${SurveyIdParam}/webhook`
      .setPayload(WebhookTarget)
      .addSuccess(WebhookRegistered)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Register or replace the survey's webhook; rotates the signing secret")
  )
  .add(
    HttpApiEndpoint.del("delete")`/surveys/${SurveyIdParam}/webhook`
      .addSuccess(HttpApiSchema.NoContent)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Stop the survey's deliveries and discard its webhook's secrets")
      .annotate(
        OpenApi.Description,
        "Pending deliveries end unsent; the delivery log stays readable until it is purged; a later PUT registers a new webhook. 204 also when none was configured."
      )
  )
  .add(
    HttpApiEndpoint.post("enable")`/surveys/${SurveyIdParam}/webhook/enable`
      .addSuccess(WebhookSettings)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Enable the survey's disabled webhook again, keeping its secret, events and rate")
      .annotate(OpenApi.Description, enableDescription)
  )
  .add(
    HttpApiEndpoint.post("test")`/surveys/${SurveyIdParam}/webhook/test`
      .addSuccess(WebhookTestResult)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Send one signed webhook.test event to the survey's webhook")
      .annotate(
        OpenApi.Description,
        "One attempt, no retries, logged; `formId` is the survey id. Answers within the 15 s attempt timeout. 400 when the survey has no enabled webhook."
      )
  )
  .add(
    HttpApiEndpoint.post("rotateSecret")`/surveys/${SurveyIdParam}/webhook/secret/rotate`
      .addSuccess(SecretRotated)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotateContext(rotateDocs("Rotate the survey webhook's signing secret, honouring the replaced one for 24 hours"))
  )
  .add(
    HttpApiEndpoint.post("redeliver")`/surveys/${SurveyIdParam}/webhook/events/${EventId}/redeliver`
      .addSuccess(Redelivery, { status: 202 })
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Send one event of this survey to the survey's webhook again")
      .annotate(OpenApi.Description, redeliverDescription)
  )
  .add(
    HttpApiEndpoint.post("recover")`/surveys/${SurveyIdParam}/webhook/recover`
      .setPayload(RecoveryWindow)
      .addSuccess(Recovery, { status: 202 })
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Send the survey's events of a time window that its webhook has not received")
      .annotate(OpenApi.Description, recoverDescription)
  )
  .add(
    HttpApiEndpoint.get("deliveries")`/surveys/${SurveyIdParam}/webhook/deliveries`
      .setUrlParams(LogParams)
      .addSuccess(DeliveryLog)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Recent delivery attempts of the survey webhook, newest first")
  )
  .middleware(JsonBody)
  .middleware(WriteAccess)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Survey webhook")
  .annotate(OpenApi.Description, "The webhook of one survey: settings, tests, secret rotation, redelivery, recovery and its delivery log.")
{}

export class WorkspaceWebhooksApi extends HttpApiGroup.make("workspaceWebhooks")
  .add(
    HttpApiEndpoint.get("get", "/webhooks")
      .addSuccess(WebhookSettings)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Read the workspace webhook (never the secret)")
  )
  .add(
    HttpApiEndpoint.put("put", "/webhooks")
      .setPayload(WebhookTarget)
      .addSuccess(WebhookRegistered)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Register or replace the workspace webhook; rotates the signing secret")
  )
  .add(
    HttpApiEndpoint.del("delete", "/webhooks")
      .addSuccess(Schema.Void, { status: 204 })
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Stop workspace-wide delivery and discard its secret")
  )
  .add(
    HttpApiEndpoint.post("enable", "/webhooks/enable")
      .addSuccess(WebhookSettings)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Enable the disabled workspace webhook again, keeping its secret, events and rate")
      .annotate(OpenApi.Description, enableDescription)
  )
  .add(
    HttpApiEndpoint.post("test", "/webhooks/test")
      .addSuccess(WebhookTestResult)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Send one signed webhook.test event to the workspace webhook")
  )
  .add(
    HttpApiEndpoint.post("rotateSecret", "/webhooks/secret/rotate")
      .addSuccess(SecretRotated)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .annotateContext(rotateDocs("Rotate the workspace webhook's signing secret, honouring the replaced one for 24 hours"))
  )
  .add(
    HttpApiEndpoint.post("redeliver")`/webhooks/events/${EventId}/redeliver`
      .addSuccess(Redelivery, { status: 202 })
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .addError(NotFound.Wire)
      .annotate(OpenApi.Summary, "Send one event of the workspace to the workspace webhook again")
      .annotate(OpenApi.Description, redeliverDescription)
  )
  .add(
    HttpApiEndpoint.post("recover", "/webhooks/recover")
      .setPayload(RecoveryWindow)
      .addSuccess(Recovery, { status: 202 })
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Send the workspace's events of a time window that its webhook has not received")
      .annotate(OpenApi.Description, recoverDescription)
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/webhooks/deliveries")
      .setUrlParams(LogParams)
      .addSuccess(DeliveryLog)
      .addError(InvalidRequest.Wire)
      .addError(Forbidden.Wire)
      .annotate(OpenApi.Summary, "Recent delivery attempts of the workspace webhook, newest first")
  )
  .middleware(JsonBody)
  .middleware(WriteAccess)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "Workspace webhook")
  .annotate(OpenApi.Description, "The webhook that receives the events of every survey of the workspace.")
{}
