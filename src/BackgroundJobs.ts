import { Effect, Layer } from "effect"
import { aggregatorJobs } from "./Analytics/Aggregator.js"
import { type BackgroundJob, runJobs } from "./Background/Jobs.js"
import { idempotencyPurgeJob } from "./Http/Idempotency.js"
import { respondentPurgeJob } from "./Respondents/RespondentPurge.js"
import { deliveryJob, DeliveryWorker, outboxDepthJobs } from "./Webhooks/DeliveryWorker.js"
import { attemptPurgeJob } from "./Webhooks/Purge.js"

/**
 * The service's background jobs, each declared once beside its work (src/Background/Jobs.ts says
 * what a declaration holds: its name, one round, when it is next due, its lease). A server runs
 * them on its clock (`BackgroundJobsLive`); on a simulated clock the same loops run while the
 * clock stands, and an advance runs their rounds in due order (src/TestClock/Advance.ts).
 */
export class BackgroundJobs extends Effect.Service<BackgroundJobs>()("BackgroundJobs", {
  scoped: Effect.gen(function*() {
    const jobs: ReadonlyArray<BackgroundJob> = [
      yield* deliveryJob,
      yield* attemptPurgeJob,
      ...(yield* aggregatorJobs),
      yield* respondentPurgeJob,
      yield* idempotencyPurgeJob,
      ...(yield* outboxDepthJobs)
    ]
    return { jobs } as const
  }),
  dependencies: [DeliveryWorker.Default]
}) {}

/** Every background job in the background of a server, each on its loop (`runJob`). Needs `BackgroundJobs`. */
export const RunBackgroundJobsLive = Layer.scopedDiscard(Effect.flatMap(BackgroundJobs, ({ jobs }) => runJobs(jobs)))
