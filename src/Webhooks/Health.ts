import { Duration } from "effect"

/** How long a webhook may fail without a single success before it is switched off (v1-extensions §X1.4). */
export const failingFor = Duration.days(5)

/**
 * What one attempt does to its webhook's record of failures (v1-extensions §X1.4): a success
 * clears it; a failure starts it, and switches the webhook off at once when the endpoint answered
 * 410, or when it has been failing since before `failingBefore`.
 */
export type HealthMove =
  | { readonly _tag: "Succeeded" }
  | { readonly _tag: "Failed"; readonly gone: boolean; readonly failingBefore: number; readonly attemptedAt: number }

export const healthMove = (attempt: {
  readonly ok: boolean
  readonly responseStatus: number | null
  readonly attemptedAt: number
}): HealthMove =>
  attempt.ok
    ? { _tag: "Succeeded" }
    : {
      _tag: "Failed",
      gone: attempt.responseStatus === 410,
      failingBefore: attempt.attemptedAt - Duration.toMillis(failingFor),
      attemptedAt: attempt.attemptedAt
    }
