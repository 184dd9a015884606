import { Schema } from "effect"

export const EventType = Schema.Literal("response.completed", "survey.published", "survey.closed", "webhook.test")
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
