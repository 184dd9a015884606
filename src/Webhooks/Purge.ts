import { Clock, Duration, Effect, Layer } from "effect"
import { periodJob, runJob } from "../Background/Jobs.js"
import { DeliverySettings } from "./DeliverySettings.js"
import { eventRetention, Redelivery } from "./Redelivery.js"
import { WebhookRepo } from "./WebhookRepo.js"

/** Delivery attempts are kept for 30 days (api-v1 §8). */
export const attemptRetention = Duration.days(30)

/**
 * Deletes the attempts past retention, the events past theirs (kept 30 days for redelivery,
 * v1-extensions §X1.2) with their finished deliveries, and the replaced signing secrets past their
 * overlap (src/Webhooks/SecretPurgeSql.ts); answers how many attempts.
 */
export const purgeOnce = Effect.gen(function*() {
  const repo = yield* WebhookRepo
  const redelivery = yield* Redelivery
  const now = yield* Clock.currentTimeMillis
  const purged = yield* repo.purgeAttempts(now - Duration.toMillis(attemptRetention))
  if (purged > 0) yield* Effect.logInfo("purged webhook delivery attempts").pipe(Effect.annotateLogs({ purged }))
  const events = yield* redelivery.purgeEvents(now - Duration.toMillis(eventRetention))
  if (events > 0) yield* Effect.logInfo("purged events past retention").pipe(Effect.annotateLogs({ events }))
  const secrets = yield* repo.purgeExpiredSecrets(now)
  if (secrets > 0) yield* Effect.logInfo("purged replaced webhook secrets past their overlap").pipe(Effect.annotateLogs({ secrets }))
  return purged
}).pipe(Effect.withSpan("Webhooks.purge"))

/**
 * The periodic purge: at start, then every `purgeInterval` (an hour); of all processes on the
 * database, the first to get there in a period runs it.
 */
export const attemptPurgeJob = Effect.gen(function*() {
  const settings = yield* DeliverySettings
  const context = yield* Effect.context<WebhookRepo | Redelivery>()
  return yield* periodJob({
    name: "webhook attempt purge",
    key: "webhook-attempt-purge",
    period: settings.purgeInterval,
    run: Effect.provide(purgeOnce, context)
  })
})

/** The periodic purge in the background of a server. */
export const PurgeLive = Layer.scopedDiscard(Effect.flatMap(attemptPurgeJob, runJob))
