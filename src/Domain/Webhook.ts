import { Schema } from "effect"
import { boundedInt, boundedString } from "./Bounds.js"
import { SubscribableEventType } from "./Event.js"

/** Why a configured webhook was switched off (v1-extensions §X1.4). */
export const DisabledReason = Schema.Literal("gone", "failing").annotations({
  identifier: "WebhookDisabledReason",
  description: "`gone`: the endpoint answered 410 Gone. `failing`: every attempt failed for 5 days."
})
export type DisabledReason = typeof DisabledReason.Type

/** A non-empty list of distinct event types from the catalogue (v1-extensions §X1.1). */
export const EventFilter = Schema.NonEmptyArray(SubscribableEventType).pipe(
  Schema.maxItems(SubscribableEventType.literals.length),
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

/** How long a replaced signing secret is still honoured (v1-extensions §X5.2). */
export const secretOverlapMillis = 24 * 60 * 60 * 1000

/** Replaced secrets honoured at once: with the current one, at most six signatures. */
export const maxPreviousSecrets = 5

const strictBase64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** The longest signing secret: `whsec_` and the base64 of 64 bytes. */
export const MAX_SIGNING_SECRET_LENGTH = 6 + 88

/** A signing secret chosen by the client: Standard Webhooks' `whsec_` + base64 of 24 to 64 bytes. */
export const SigningSecret = boundedString(MAX_SIGNING_SECRET_LENGTH).pipe(
  Schema.filter((secret) => {
    if (!secret.startsWith("whsec_")) return "must start with `whsec_`"
    const encoded = secret.slice(6)
    if (!strictBase64.test(encoded)) return "must be `whsec_` followed by standard base64"
    const bytes = Buffer.from(encoded, "base64").length
    return bytes >= 24 && bytes <= 64 ? true : `must encode 24 to 64 bytes, not ${bytes}`
  })
).annotations({
  identifier: "WebhookSigningSecret",
  description: "`whsec_` + standard base64 of 24 to 64 random bytes.",
  examples: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
})

/** A replaced secret and the instant (epoch ms) until which deliveries are still signed with it. */
export const PreviousSecret = Schema.Struct({ secret: Schema.String, expiresAt: Schema.Number })
export type PreviousSecret = typeof PreviousSecret.Type

/** The replaced secrets of a webhook, newest first. */
export const PreviousSecrets = Schema.Array(PreviousSecret)

/**
 * The secrets an attempt at `now` is signed with, newest first: the current one, then the
 * replaced ones still honoured, at most `maxPreviousSecrets` of them.
 */
export const honouredSecrets = (
  current: string,
  previous: ReadonlyArray<PreviousSecret>,
  now: number
): readonly [string, ...Array<string>] => [
  current,
  ...previous.filter((replaced) => replaced.expiresAt > now).slice(0, maxPreviousSecrets).map((replaced) => replaced.secret)
]

/** When the last replaced secret still honoured at `now` stops being honoured; null when none is. */
export const previousSecretsExpireAt = (previous: ReadonlyArray<PreviousSecret>, now: number): number | null => {
  const honoured = previous.filter((replaced) => replaced.expiresAt > now).slice(0, maxPreviousSecrets)
  return honoured.length === 0 ? null : Math.max(...honoured.map((replaced) => replaced.expiresAt))
}

/** The replaced secrets after `current` is replaced at `now`: it first, expired ones dropped, at most five. */
export const afterRotation = (
  current: string,
  previous: ReadonlyArray<PreviousSecret>,
  now: number
): ReadonlyArray<PreviousSecret> =>
  [{ secret: current, expiresAt: now + secretOverlapMillis }, ...previous.filter((replaced) => replaced.expiresAt > now)]
    .slice(0, maxPreviousSecrets)

/** A webhook's delivery rate (v1-extensions §X5.3). */
export const MaxAttemptsPerSecond = boundedInt(1, 1000).annotations({
  identifier: "WebhookMaxAttemptsPerSecond",
  description: "Attempts per second at most, 1 to 1000.",
  // One sentence for every way a value misses it (a fraction, a string, 0): what it must be.
  message: () => ({ message: "must be an integer from 1 to 1000, or null for no limit", override: true })
})
