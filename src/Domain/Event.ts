import { Schema } from "effect"

/**
 * The event types a webhook may subscribe to (v1-extensions §X1.1): the whole catalogue of
 * events the outbox carries. `webhook.test` is not among them: it is sent on request, never
 * filtered and never written to the outbox.
 */
export const SubscribableEventType = Schema.Literal(
  "response.completed",
  "survey.published",
  "survey.closed",
  "response.created",
  "response.updated",
  "response.deleted"
).annotations({ identifier: "EventType" })
export type SubscribableEventType = typeof SubscribableEventType.Type

/** What a webhook receives when its `events` are not given: the v1 set. */
export const defaultEventTypes: ReadonlyArray<SubscribableEventType> = [
  "response.completed",
  "survey.published",
  "survey.closed"
]

export const EventType = Schema.Union(SubscribableEventType, Schema.Literal("webhook.test"))
export type EventType = typeof EventType.Type

/** The envelope every delivery carries (decisions §7). `data` depends on the type. */
export const EventEnvelope = Schema.Struct({
  id: Schema.String,
  type: EventType,
  timestamp: Schema.String,
  formId: Schema.NullOr(Schema.String),
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type EventEnvelope = typeof EventEnvelope.Type
