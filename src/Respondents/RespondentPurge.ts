import { Clock, Duration, Effect, Layer } from "effect"
import { periodJob, runJob } from "../Background/Jobs.js"
import { toIso } from "../Domain/Time.js"
import { RespondentLimits } from "./RespondentLimits.js"
import { RespondentTokenRepo } from "./RespondentTokenRepo.js"

/** Spent embed sessions are kept this long after they expire, then deleted. */
export const EMBED_SESSION_RETENTION_MILLIS = 30 * 86_400_000

/**
 * Deletes respondent tokens that have expired (an embed page's; earlier versions stored one for
 * every page view of `/s/{id}`) and embed sessions long past their expiry. Responses and their
 * answers are never touched.
 */
export class RespondentPurge extends Effect.Service<RespondentPurge>()("Respondents/RespondentPurge", {
  effect: Effect.gen(function*() {
    const repo = yield* RespondentTokenRepo
    const run = Effect.fn("RespondentPurge.run")(function*() {
      const now = yield* Clock.currentTimeMillis
      const tokens = yield* repo.deleteExpired(toIso(now))
      const embedSessions = yield* repo.deleteEmbedSessions(toIso(now - EMBED_SESSION_RETENTION_MILLIS))
      return { tokens, embedSessions } as const
    })
    return { run } as const
  })
}) {}

/**
 * Runs the purge, and deletes the respondent limits' counts that no longer count, at start and then
 * every hour while the server runs: once an hour over all processes.
 */
export const respondentPurgeJob = Effect.gen(function*() {
  const purge = yield* RespondentPurge
  const limits = yield* RespondentLimits
  return yield* periodJob({
    name: "respondent token purge",
    key: "respondent-purge",
    period: Duration.hours(1),
    run: purge.run().pipe(
      Effect.zipWith(limits.forget, (removed, counts) => ({ ...removed, limitCounts: counts })),
      Effect.tap((removed) =>
        removed.tokens + removed.embedSessions + removed.limitCounts > 0
          ? Effect.logDebug("purged respondent tokens", removed)
          : Effect.void
      )
    )
  })
})

/** The respondent purge in the background of a server. */
export const RespondentPurgeLive = Layer.scopedDiscard(Effect.flatMap(respondentPurgeJob, runJob))
