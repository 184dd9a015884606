import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { periodically } from "../Background/Supervise.js"
import { DeliverySettings } from "./DeliverySettings.js"
import { WebhookRepo } from "./WebhookRepo.js"

/** Delivery attempts are kept for 30 days (api-v1 §8). */
export const attemptRetention = Duration.days(30)

/** Deletes the attempts that are past retention; answers how many. */
export const purgeOnce = Effect.gen(function*() {
  const repo = yield* WebhookRepo
  const now = yield* Clock.currentTimeMillis
  const purged = yield* repo.purgeAttempts(now - Duration.toMillis(attemptRetention))
  if (purged > 0) yield* Effect.logInfo("purged webhook delivery attempts").pipe(Effect.annotateLogs({ purged }))
  return purged
}).pipe(Effect.withSpan("Webhooks.purge"))

/** The periodic purge: at start, then every `purgeInterval` (an hour). */
export const PurgeLive = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* DeliverySettings
  yield* periodically("webhook attempt purge", purgeOnce, Schedule.spaced(settings.purgeInterval))
}))
