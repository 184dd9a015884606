import { Schema } from "effect"
import { SubscribableEventType } from "./Event.js"

/** Why a configured webhook was switched off (v1-extensions §X1.4). */
export const DisabledReason = Schema.Literal("gone", "failing").annotations({
  identifier: "WebhookDisabledReason",
  description: "`gone`: the endpoint answered 410 Gone. `failing`: every attempt failed for 5 days."
})
export type DisabledReason = typeof DisabledReason.Type

/** A non-empty list of distinct event types from the catalogue (v1-extensions §X1.1). */
export const EventFilter = Schema.NonEmptyArray(SubscribableEventType).pipe(
  Schema.filter((types) => {
    const seen = new Set<string>()
    for (const [index, type] of types.entries()) {
      if (seen.has(type)) return { path: [index], message: `\`${type}\` is listed more than once` }
      seen.add(type)
    }
    return true
  })
).annotations({
  identifier: "WebhookEventFilter",
  description: "Distinct event types the webhook receives; at least one.",
  examples: [["response.completed", "survey.published", "survey.closed"]]
})
